"""Cached compute for the trained-causal-model page: traces, head scores, loss curve figure.

The model is loaded once per process per checkpoint (:func:`transformer_core.models.causal.load_causal_model`)
and captured in a thread-private context, so sessions may run it at once. :func:`~ui.shell.cache.memo` keys
traces by value (byte-bounded); the loss-curve figure, one per checkpoint, is ``st.cache_data``;
:class:`~transformer_core.models.causal.CausalUnavailable` is raised, not cached.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch

from transformer_core.models.causal import (CAUSAL_CONFIG, induction_score, previous_token_score, repeated_tokens,
                                     run_causal, training_log)
from transformer_core.analysis.value_norms import with_norms
from transformer_core.records.trace import Trace

from ..shell.cache import memo
from ..shell.chart import Spec, spec
from ..shell.i18n import _

VOCAB = CAUSAL_CONFIG.vocab_size
MAX_TOKENS = CAUSAL_CONFIG.max_positions


def generate(period: int, seed: int, length: int | None = None) -> list[int]:
    """``period`` random token ids (from a local generator seeded with ``seed``) repeated to ``length``
    (default: twice, capped at the model's 48 positions)."""
    length = min(MAX_TOKENS, 2 * period) if length is None else length
    return repeated_tokens(1, period, length, VOCAB, torch.Generator().manual_seed(seed))[0].tolist()


def regenerate() -> None:
    """``on_change`` of the period and seed inputs: a new sequence of that period from that seed."""
    ss = st.session_state
    ss["causal_text"] = " ".join(map(str, generate(ss["causal_period"], ss["causal_seed"])))


def next_seed() -> None:
    """``on_click`` of "New random sequence": the next seed (0–99, wrapping) and its sequence."""
    st.session_state["causal_seed"] = (st.session_state["causal_seed"] + 1) % 100
    regenerate()


def detect_period(ids: list[int]) -> int | None:
    """The smallest ``p`` with ``ids[i] == ids[i − p]`` for every ``i ≥ p``, if the sequence repeats at
    least 2 tokens of its first period; else None."""
    for p in range(1, len(ids) - 1):
        if all(ids[i] == ids[i - p] for i in range(p, len(ids))):
            return p if len(ids) - p >= 2 else None
    return None


@st.cache_resource(show_spinner=False)
def log() -> dict:
    """The committed training record (:func:`~transformer_core.models.causal.training_log`), read once per process
    and shared (read it, never change it); an ``OSError`` is raised, not cached."""
    return training_log()


@memo("causal_trace")
def causal_trace(ids: tuple[int, ...], step: int | None, causal: bool) -> Trace:
    """Every stage of checkpoint ``step`` on ``ids`` (see :func:`transformer_core.models.causal.run_causal`)."""
    return run_causal(list(ids), step=step, causal=causal)


def sequence_scores(trace: Trace, period: int | None) -> dict:
    """Previous-token and induction score ``[layer][head]`` on this one sequence (induction: None without a period)."""
    out = {"previous_token": [], "induction": []}
    for layer in range(trace.n_layers):
        # a copy (cached arrays are read-only): [batch, head, query_pos, key_pos]
        w = torch.tensor(trace.stage("weights", layer))
        # one token: no query has a previous token, so there is no score (None, shown as an empty cell)
        out["previous_token"].append(previous_token_score(w).tolist() if w.shape[-1] >= 2 else [None] * w.shape[1])
        ok = period is not None and w.shape[-1] - period >= 2
        out["induction"].append(induction_score(w, period).tolist() if ok else [None] * w.shape[1])
    return out


def loss_summary(trace: Trace, period: int | None) -> dict:
    """Mean loss (nats) on the whole sequence, the first period and the repeats, from ``token_loss``.

    A mean over no prediction is None, never NaN: ``"all"`` for a one-token sequence (there is no next
    token), ``"first"`` for a period of 1 (every prediction is a repeat)."""
    loss = trace.stages["token_loss"][0]  # [pos-1]; entry t predicts token t+1
    out = {"all": float(loss.mean()) if len(loss) else None}
    if period is not None and len(loss) >= period:
        out["first"] = float(loss[:period - 1].mean()) if period > 1 else None
        out["repeat"] = float(loss[period - 1:].mean())
    return out


def future_share(trace: Trace) -> float:
    """Mean, over every layer, head and query, of the weight on keys after the query (0 under the causal mask)."""
    shares = []
    for layer in range(trace.n_layers):
        w = trace.stage("weights", layer)[0]  # [head, query_pos, key_pos]
        shares.append(np.triu(w, k=1).sum(-1).mean())
    return float(np.mean(shares))


@st.cache_data(show_spinner=False)
def loss_curve(step: int, lang: str = "en") -> Spec:
    """The committed training loss per step (and a 50-step running mean), with checkpoint ``step`` marked, as chart
    JSON (built once per checkpoint and language, not on every run); its words in ``lang`` (part of the cache key)."""
    losses = np.asarray(log()["losses"])
    smooth = np.convolve(losses, np.ones(50) / 50, mode="valid")
    fig = go.Figure()
    fig.add_scatter(x=np.arange(len(losses)), y=losses, mode="lines", name=_("loss per step", lang),
                    line=dict(color="#c6dbef", width=1))
    fig.add_scatter(x=np.arange(49, len(losses)), y=smooth, mode="lines", name=_("mean of 50 steps", lang),
                    line=dict(color="#08519c", width=2))
    fig.add_vline(x=step, line=dict(color="#d62728", width=2, dash="dash"),
                  annotation_text=_("checkpoint: step {step}", lang).format(step=step), annotation_position="top right")
    fig.update_layout(height=260, margin=dict(l=50, r=10, t=30, b=40), xaxis_title=_("training step", lang),
                      yaxis_title=_("loss (nats)", lang), legend=dict(orientation="h", y=1.15, x=0),
                      meta={"stage": "loss_curve", "step": step})
    return spec(fig)


@memo("causal_trace")
def causal_with_norms(ids: tuple[int, ...], step, causal: bool) -> Trace:
    """The causal page's trace (:func:`causal_trace`) plus ``norms`` of both layers."""
    return with_norms(causal_trace(ids, step, causal))
