"""Cached compute for the MiniLM page: (sentences, padding) in, a slim MiniLM :class:`Trace` out.

The model is loaded once per process inside :func:`~transformer_core.pretrained.load_minilm`
and never mutated; :func:`~transformer_core.hooks.capture` records into a per-thread
context, so sessions may run it at once. ``st.cache_data`` keys by value and hands each
session its own copy of the trace. A missing or corrupt MiniLM raises
:class:`~transformer_core.pretrained.PretrainedUnavailable`, which is not cached (a later
run retries).
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from transformer_core.head_stats import head_stats
from transformer_core.trace import Trace

from .state import MAX_TOKENS

SHOWN_STAGES = ("scores", "masked_scores", "weights", "context")  # what the page draws; the rest is dropped
# Added when the learner types one sentence, so the padding mask has a shorter sentence to act on.
SHORT_EXAMPLE = "Dogs bark."
LONG_EXAMPLE = "After a long day at the busy harbour, the old fisherman finally sat down to rest."
SHORT_LIMIT = 10  # tokens ([CLS] and [SEP] included); up to this, the long example is added


def _token_count(sentence: str) -> int:
    """WordPiece tokens of ``sentence`` with [CLS] and [SEP] (words + 2 if the tokenizer is missing)."""
    try:
        from transformer_core.tokenize import load_wordpiece

        return len(load_wordpiece().encode(sentence, add_special_tokens=True).ids)
    except Exception:  # the page reports a missing MiniLM itself, from the compute
        return len(sentence.split()) + 2


def with_example(sentences: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    """``(batch, added)``: one sentence gets a built-in example of a different length.

    A short sentence (≤ :data:`SHORT_LIMIT` tokens) gets :data:`LONG_EXAMPLE` (so the
    learner's sentence is padded), a longer one :data:`SHORT_EXAMPLE` (the example is padded).
    ``added`` is the example, or None when the batch is used as typed.
    """
    if len(sentences) != 1:
        return tuple(sentences), None
    example = LONG_EXAMPLE if _token_count(sentences[0]) <= SHORT_LIMIT else SHORT_EXAMPLE
    return (sentences[0], example), example


@st.cache_data(max_entries=8, show_spinner="Running MiniLM-L6 …")  # a 128-token trace is ~90 MB
def minilm_trace(sentences: tuple[str, ...], padding: bool) -> Trace:
    """MiniLM-L6's trace of ``sentences`` (cut to ``MAX_TOKENS`` tokens each), keeping only
    the attention stages the page shows, so a cached copy stays small.

    Raises:
        PretrainedUnavailable: MiniLM is not installed, or its files are corrupt.
        ValueError: no sentence has a token.
    """
    from transformer_core.pretrained_trace import run_minilm

    trace = run_minilm(list(sentences), padding=padding, max_tokens=MAX_TOKENS)
    keep = {name: array for name, array in trace.stages.items()
            if name.startswith("layers.") and name.rsplit(".", 1)[-1] in SHOWN_STAGES and ".attention." in name}
    return Trace(tokens=trace.tokens, lengths=trace.lengths, truncated=trace.truncated, mask=trace.mask,
                 stages=keep, settings=trace.settings)


@st.cache_data(max_entries=32, show_spinner=False)
def minilm_stats(sentences: tuple[str, ...], padding: bool, batch: int):
    """:func:`~transformer_core.head_stats.head_stats` of one sentence of :func:`minilm_trace`."""
    return head_stats(minilm_trace(sentences, padding), batch)


def special_mask(trace: Trace, batch: int) -> np.ndarray:
    """bool ``[key_pos]``: the [CLS], [SEP] and [PAD] keys of sentence ``batch``."""
    from transformer_core.head_stats import special_keys

    return special_keys(trace.tokens[batch])
