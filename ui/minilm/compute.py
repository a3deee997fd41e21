"""Cached compute for the MiniLM page: (sentences, padding) in, small summaries and one layer's trace out.

The model is loaded once per process inside :func:`~transformer_core.models.minilm.load_minilm`
and never mutated; :func:`~transformer_core.nn.hooks.capture` records into a per-thread
context, so sessions may run it at once. :func:`~ui.shell.cache.memo` keys by value and shares one
read-only trace between sessions (byte-bounded, expiring). A missing or corrupt MiniLM raises
:class:`~transformer_core.models.minilm.PretrainedUnavailable`, which is not cached (a later
run retries).
"""
from __future__ import annotations

import functools

import numpy as np
import streamlit as st

from transformer_core.analysis.head_stats import head_stats
from transformer_core.records.trace import Trace

from ..shell import heavy
from ..shell.cache import memo
from ..shell.controls import MAX_TOKENS
from ..shell.i18n import _

MAX_MINILM_TOKENS = 512  # the model's own limit (its learned position table), [CLS] and [SEP] included
N_LAYERS, N_HEADS = 6, 12

SHOWN_STAGES = ("q", "k", "v", "scores", "masked_scores", "weights", "context")  # what the page draws; the rest is dropped
# Added when the learner types one sentence, so the padding mask has a shorter sentence to act on.
SHORT_EXAMPLE = "Dogs bark."
LONG_EXAMPLE = "After a long day at the busy harbour, the old fisherman finally sat down to rest."
SHORT_LIMIT = 10  # tokens ([CLS] and [SEP] included); up to this, the long example is added


def _token_count(sentence: str) -> int:
    """WordPiece tokens of ``sentence`` with [CLS] and [SEP], tokenized exactly as ``run_minilm`` does
    (:func:`~transformer_core.text.tokenize.wordpiece_tokenize`; words + 2 if the tokenizer is missing)."""
    try:
        from transformer_core.text.tokenize import wordpiece_tokenize

        return len(wordpiece_tokenize(sentence))
    except Exception:  # the page reports a missing MiniLM itself, from the compute
        return len(sentence.split()) + 2


def attention_nbytes(sentences: tuple[str, ...]) -> int:
    """Bytes of the attention weights of every layer for ``sentences`` (the batch padded to its longest sentence,
    at most :data:`MAX_MINILM_TOKENS`)."""
    tokens = min(MAX_MINILM_TOKENS, max(_token_count(s) for s in sentences))
    return heavy.attention_bytes(len(sentences), tokens, N_LAYERS, N_HEADS)


def large(sentences: tuple[str, ...]):
    """:func:`ui.shell.heavy.large` for a MiniLM computation on ``sentences``, sized by :func:`attention_nbytes`:
    each step of the page measured at most 2.7× those bytes (benchmarks/bench_memory.py), whichever stages it
    keeps."""
    return heavy.large(attention_nbytes(sentences))


def holding(func):
    """Decorator: ``func`` (whose first argument is the sentences) runs inside :func:`large`, so what it computes
    from a large all-layer run is held under the same slot as the run itself."""
    @functools.wraps(func)
    def run(sentences, *args, **kwargs):
        with large(sentences):
            return func(sentences, *args, **kwargs)
    return run


def with_example(sentences: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    """``(batch, added)``: one sentence gets a built-in example of a different length.

    A sentence of more than ``MAX_TOKENS`` (128) tokens is used alone (its trace is large enough).
    A short sentence (≤ :data:`SHORT_LIMIT` tokens) gets :data:`LONG_EXAMPLE` (so the
    learner's sentence is padded), a longer one :data:`SHORT_EXAMPLE` (the example is padded).
    ``added`` is the example, or None when the batch is used as typed.
    """
    if len(sentences) != 1 or _token_count(sentences[0]) > MAX_TOKENS:  # a long text is padding enough
        return tuple(sentences), None
    example = LONG_EXAMPLE if _token_count(sentences[0]) <= SHORT_LIMIT else SHORT_EXAMPLE
    return (sentences[0], example), example


@memo("encoder_summaries")
def minilm_summary(sentences: tuple[str, ...], padding: bool) -> dict:
    """What the page shows of every layer, small enough to cache for long inputs.

    One run that records only the weights of the 6 layers, reduced at once to
    ``{"trace": Trace with the tokens and mask (no stages), "overview": {(batch, hide_special):
    tiled_weights(...)}, "stats": {batch: head_stats DataFrame}}``. Sentences are cut to
    :data:`MAX_MINILM_TOKENS` tokens ([CLS] and [SEP] included).

    Raises:
        PretrainedUnavailable: MiniLM is not installed, or its files are corrupt.
        ValueError: no sentence has a token.
    """
    from transformer_core.analysis.head_stats import special_keys
    from transformer_core.figures.overview import tiled_weights
    from transformer_core.models.minilm_trace import run_minilm

    with large(sentences), st.spinner(_("Running MiniLM-L6 …")):
        trace = run_minilm(list(sentences), padding=padding, max_tokens=MAX_MINILM_TOKENS,
                           only=lambda name: name.endswith(".attention.weights"))
        batches = range(len(trace.tokens))
        summary = {
            "trace": Trace(tokens=trace.tokens, lengths=trace.lengths, truncated=trace.truncated, mask=trace.mask,
                           stages={}, settings=trace.settings),
            "overview": {(b, hide): tiled_weights(trace, b, special_keys(trace.tokens[b]) if hide else None)
                         for b in batches for hide in (False, True)},
            "stats": {b: head_stats(trace, b) for b in batches},
        }
        del trace  # every layer's weights: dropped before the slot is given back
    return summary


@memo("encoder_layers")
def minilm_layer(sentences: tuple[str, ...], padding: bool, layer: int) -> Trace:
    """MiniLM-L6's trace of ``sentences`` holding only the stages the page draws of one ``layer``
    (``layers.{layer}.attention.{scores,masked_scores,weights,context}``): a 512-token layer is
    ~50 MB per sentence, the whole model ~570 MB.

    Raises:
        PretrainedUnavailable: MiniLM is not installed, or its files are corrupt.
        ValueError: no sentence has a token, or ``layer`` is not in 0…5.
    """
    from transformer_core.models.minilm_trace import run_minilm

    prefix = f"layers.{layer}.attention."
    with large(sentences), st.spinner(_("Running MiniLM-L6 …")):
        return run_minilm(list(sentences), padding=padding, max_tokens=MAX_MINILM_TOKENS, n_layers=layer + 1,
                          only=lambda name: name.startswith(prefix) and name[len(prefix):] in SHOWN_STAGES)


def special_mask(trace: Trace, batch: int) -> np.ndarray:
    """bool ``[key_pos]``: the [CLS], [SEP] and [PAD] keys of sentence ``batch``."""
    from transformer_core.analysis.head_stats import special_keys

    return special_keys(trace.tokens[batch])
