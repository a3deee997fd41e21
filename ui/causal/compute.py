"""Cached compute for the trained-causal-model page: traces, the sequence's measures, the loss curve figure.

The numbers are :mod:`transformer_core.analysis.causal_sequence`'s (the sequence, its period, head scores, losses,
future share) and the curve :func:`transformer_core.figures.loss_curve.loss_curve_figure`; this module caches them.
The model is loaded once per process per checkpoint (:func:`transformer_core.models.causal.load_causal_model`)
and captured in a thread-private context, so sessions may run it at once. :func:`~ui.shell.cache.memo` keys
traces by value (byte-bounded); the loss-curve figure, one per checkpoint, is ``st.cache_data``;
:class:`~transformer_core.models.causal.CausalUnavailable` is raised, not cached.
"""
from __future__ import annotations

import streamlit as st

from transformer_core.analysis.causal_sequence import detect_period, future_share, loss_summary, sequence_scores
from transformer_core.analysis.causal_sequence import repeated_sequence as generate
from transformer_core.analysis.value_norms import with_norms
from transformer_core.figures.loss_curve import loss_curve_figure
from transformer_core.models.causal import CAUSAL_CONFIG, CausalUnavailable, load_causal_model, run_causal, training_log
from transformer_core.records.trace import Trace

from ..shell import diagnostics
from ..shell.cache import memo
from ..shell.chart import Spec, spec

__all__ = ["MAX_TOKENS", "VOCAB", "causal_trace", "causal_with_norms", "count_forwards", "detect_period", "future_share",
           "generate", "log", "loss_curve", "loss_summary", "next_seed", "regenerate", "sequence_scores"]
VOCAB = CAUSAL_CONFIG.vocab_size
MAX_TOKENS = CAUSAL_CONFIG.max_positions


def regenerate() -> None:
    """``on_change`` of the period and seed inputs: a new sequence of that period from that seed."""
    ss = st.session_state
    ss["causal_text"] = " ".join(map(str, generate(ss["causal_period"], ss["causal_seed"])))


def next_seed() -> None:
    """``on_click`` of "New random sequence": the next seed (0–99, wrapping) and its sequence."""
    st.session_state["causal_seed"] = (st.session_state["causal_seed"] + 1) % 100
    regenerate()


@st.cache_resource(show_spinner=False)
def log() -> dict:
    """The committed training record (:func:`~transformer_core.models.causal.training_log`), read once per process
    and shared (read it, never change it); an ``OSError`` is raised, not cached."""
    return training_log()


def count_forwards() -> None:
    """With diagnostics on (:mod:`ui.shell.diagnostics`, ``AE_DIAGNOSTICS=1``), count every checkpoint's whole-model
    forward calls under ``"causal"``, whichever part of the page runs it (the tests check that the page runs the
    model no more than its numbers need). Without diagnostics: nothing, and no checkpoint is loaded."""
    if not diagnostics.enabled():
        return
    for step in log()["checkpoint_steps"]:
        try:
            diagnostics.count_forwards(load_causal_model(step), "causal")
        except CausalUnavailable:  # the page says so where it runs the model
            return


@memo("causal_traces")
def causal_trace(ids: tuple[int, ...], step: int | None, causal: bool) -> Trace:
    """Every stage of checkpoint ``step`` on ``ids`` (see :func:`transformer_core.models.causal.run_causal`)."""
    return run_causal(list(ids), step=step, causal=causal)


@st.cache_data(show_spinner=False)
def loss_curve(step: int, lang: str = "en") -> Spec:
    """The committed training loss per step (and a 50-step running mean), with checkpoint ``step`` marked, as chart
    JSON (built once per checkpoint and language, not on every run); its words in ``lang`` (part of the cache key)."""
    fig = loss_curve_figure(log()["losses"], step, lang)
    return spec(fig)


@memo("causal_traces")
def causal_with_norms(ids: tuple[int, ...], step, causal: bool) -> Trace:
    """The causal page's trace (:func:`causal_trace`) plus ``norms`` of both layers."""
    return with_norms(causal_trace(ids, step, causal))
