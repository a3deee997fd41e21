"""Cached compute: settings in, :class:`~transformer_core.records.trace.Trace` out.

:func:`~ui.shell.cache.memo` keys by value and shares one read-only trace between sessions (byte-bounded,
expiring); each call builds its own small model from (config, seed), so no model is shared or
hooked across sessions.
"""
from __future__ import annotations

import dataclasses

import streamlit as st

from transformer_core import EncoderConfig, Trace, run_toy

from ..shell.cache import memo
from ..shell.controls import MAX_TOKENS, Settings
from ..shell.i18n import _


@memo("toy_traces")
def toy_trace(settings: Settings, n_layers: int = 1, dropout: float = 0.0, n_kv_heads: int | None = None,
              window: int | None = None, sinks: int = 0) -> Trace:
    """The toy encoder's trace for these settings (raises ValueError on no tokens); ``n_kv_heads`` shared key/value
    heads (None: one per query head) and a sliding ``window`` with ``sinks`` (None: no window), the explorer's own."""
    config = EncoderConfig(d_model=settings.d_model, n_heads=settings.n_heads, d_ff=4 * settings.d_model,
                           n_layers=n_layers, dropout=dropout, seed=settings.seed, n_kv_heads=n_kv_heads)
    return run_toy(list(settings.sentences), config, tokenizer=settings.tokenizer, causal=settings.causal,
                   padding=settings.padding, max_tokens=MAX_TOKENS, window=window, sinks=sinks)


def wordpiece_problem() -> str | None:
    """Why MiniLM's WordPiece tokenizer cannot be loaded (package missing, ``tokenizer.json`` corrupt), or None.

    Not cached: a fixed installation is picked up on the next run (a loaded tokenizer is cached
    by :func:`transformer_core.text.tokenize.load_wordpiece` itself).
    """
    from transformer_core.models.minilm import PretrainedUnavailable
    from transformer_core.text.tokenize import load_wordpiece

    try:
        load_wordpiece()
    except PretrainedUnavailable as err:
        return str(err)
    except Exception as err:  # noqa: BLE001 tokenizers raises a bare Exception for a corrupt file
        return f"MiniLM tokenizer cannot be loaded: {str(err).strip() or type(err).__name__}"
    return None


def usable(settings: Settings) -> Settings:
    """``settings`` as a page can run them: the word-level tokenizer, with a note, where WordPiece
    was asked for and cannot be loaded. The sidebar keeps the learner's choice."""
    if settings.tokenizer != "wordpiece" or (problem := wordpiece_problem()) is None:
        return settings
    st.warning(_("The BERT WordPiece tokenizer is not available (it comes with the trained model MiniLM-L6), so this "
                 "page uses the word-level tokenizer: {problem}").format(problem=problem), icon=":material/block:")
    return dataclasses.replace(settings, tokenizer="word")
