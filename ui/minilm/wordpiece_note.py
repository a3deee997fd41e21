"""MiniLM keeps its own WordPiece: a note, in the learner's language, with the count of ``[UNK]`` tokens.

The word-level tokenizer of the toy pages cuts Chinese into words (jieba); MiniLM cannot: its weights were
learned on BERT's uncased WordPiece vocabulary, which has one piece per common Chinese character and none
for the rest, so most Chinese becomes ``[UNK]`` ("unknown").
"""
from __future__ import annotations

import streamlit as st

from transformer_core.records.trace import Trace

from ..shell.i18n import _, ngettext
from ..shell.markdown import plain

UNK = "[UNK]"


def unk_count(trace: Trace, batch: int) -> tuple[int, int]:
    """``(unknown, real)``: ``[UNK]`` tokens and real tokens (``[CLS]``, ``[SEP]`` and ``[PAD]`` not counted)."""
    real = [t for t in trace.tokens[batch][: trace.lengths[batch]] if t not in ("[CLS]", "[SEP]")]
    return sum(t == UNK for t in real), len(real)


def unknown_words_line(text: str) -> str:
    """Which words of ``text`` became ``[UNK]`` and what that does to the weights (plain text; "" if none)."""
    from transformer_core.analysis.unknown_words import unknown_words

    try:
        words = unknown_words(text)
    except RuntimeError:  # no WordPiece: the page says so itself
        return ""
    if not words:
        return ""
    shown = list(dict.fromkeys(words))  # each word once, in order
    listed = ", ".join(shown[:20]) + (" …" if len(shown) > 20 else "")
    return _("[UNK] here stands for: {words}. Every [UNK] has the same embedding, so before position is added the "
             "model cannot tell these words apart: the weights to and from them differ only through position and "
             "context, not through what the words mean.").format(words=listed)


def show(trace: Trace, batch: int, text: str | None = None) -> None:
    """An info note when sentence ``batch`` holds ``[UNK]`` tokens (nothing otherwise); with ``text`` (the sentence
    as typed) it names the words that became ``[UNK]`` (:func:`unknown_words_line`)."""
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
        if text is not None and (line := unknown_words_line(text)):
            st.caption(plain(line))
