"""Cached compute: settings in, :class:`~transformer_core.trace.Trace` out.

``st.cache_data`` keys by value and hands every session its own copy; each call builds
its own small model from (config, seed), so no object is shared or hooked across sessions.
"""
from __future__ import annotations

import streamlit as st

from transformer_core import EncoderConfig, Trace, run_toy

from .state import MAX_TOKENS, Settings


@st.cache_data(max_entries=128, show_spinner=False)
def toy_trace(settings: Settings, n_layers: int = 1, dropout: float = 0.0) -> Trace:
    """The toy encoder's trace for these settings (raises ValueError on no tokens)."""
    config = EncoderConfig(d_model=settings.d_model, n_heads=settings.n_heads, d_ff=4 * settings.d_model,
                           n_layers=n_layers, dropout=dropout, seed=settings.seed)
    return run_toy(list(settings.sentences), config, tokenizer=settings.tokenizer, causal=settings.causal,
                   padding=settings.padding, max_tokens=MAX_TOKENS)
