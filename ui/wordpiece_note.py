"""MiniLM keeps its own WordPiece: a note, in the learner's language, with the count of ``[UNK]`` tokens.

The word-level tokenizer of the toy pages cuts Chinese into words (jieba); MiniLM cannot: its weights were
learned on BERT's uncased WordPiece vocabulary, which has one piece per common Chinese character and none
for the rest, so most Chinese becomes ``[UNK]`` ("unknown").
"""
from __future__ import annotations

import streamlit as st

from transformer_core.records.trace import Trace

from .i18n import ngettext

UNK = "[UNK]"


def unk_count(trace: Trace, batch: int) -> tuple[int, int]:
    """``(unknown, real)``: ``[UNK]`` tokens and real tokens (``[CLS]``, ``[SEP]`` and ``[PAD]`` not counted)."""
    real = [t for t in trace.tokens[batch][: trace.lengths[batch]] if t not in ("[CLS]", "[SEP]")]
    return sum(t == UNK for t in real), len(real)


def show(trace: Trace, batch: int) -> None:
    """An info note when sentence ``batch`` holds ``[UNK]`` tokens (nothing otherwise)."""
    unknown, real = unk_count(trace, batch)
    if unknown:
        st.info(ngettext(
            "MiniLM reads text with its own WordPiece vocabulary (BERT uncased): one token per Chinese character, "
            "and [UNK] (unknown) for a character it has no piece for. Here {unk} of {n} tokens is [UNK]: the model "
            "sees them all as the same token. The toy pages' word-level tokenizer cuts Chinese into words; MiniLM "
            "cannot, its weights were learned on its own vocabulary.",
            "MiniLM reads text with its own WordPiece vocabulary (BERT uncased): one token per Chinese character, "
            "and [UNK] (unknown) for a character it has no piece for. Here {unk} of {n} tokens are [UNK]: the model "
            "sees them all as the same token. The toy pages' word-level tokenizer cuts Chinese into words; MiniLM "
            "cannot, its weights were learned on its own vocabulary.", unknown).format(unk=unknown, n=real),
            icon=":material/help:")
