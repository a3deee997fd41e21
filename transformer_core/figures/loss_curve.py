"""The causal model's training curve: the loss of every training step, its 50-step running mean, and one checkpoint
marked. ``layout.meta`` is ``{"stage": "loss_curve", "step": step}`` so tests can find it.

Shape legend: step (training steps, one loss each).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..text.i18n import _

SMOOTHING = 50  # steps in the running mean


def loss_curve_figure(losses, step: int, lang: str | None = None) -> go.Figure:
    """``losses [step]`` (nats, e.g. :func:`~transformer_core.models.causal.training_log`'s ``"losses"``) as a thin
    line, their running mean over :data:`SMOOTHING` steps (drawn from step 49 on), and a dashed line at checkpoint
    ``step``; words in ``lang`` (default: the current thread's language, :mod:`transformer_core.text.i18n`).
    260 px tall.

    Raises:
        ValueError: fewer losses than :data:`SMOOTHING` (no running mean to draw).
    """
    losses = np.asarray(losses, dtype=float)
    if len(losses) < SMOOTHING:
        raise ValueError(f"a loss curve needs at least {SMOOTHING} steps, got {len(losses)}")
    smooth = np.convolve(losses, np.ones(SMOOTHING) / SMOOTHING, mode="valid")
    fig = go.Figure()
    fig.add_scatter(x=np.arange(len(losses)), y=losses, mode="lines", name=_("loss per step", lang),
                    line=dict(color="#c6dbef", width=1))
    fig.add_scatter(x=np.arange(SMOOTHING - 1, len(losses)), y=smooth, mode="lines", name=_("mean of 50 steps", lang),
                    line=dict(color="#08519c", width=2))
    fig.add_vline(x=step, line=dict(color="#d62728", width=2, dash="dash"),
                  annotation_text=_("checkpoint: step {step}", lang).format(step=step), annotation_position="top right")
    fig.update_layout(height=260, margin=dict(l=50, r=10, t=30, b=40), xaxis_title=_("training step", lang),
                      yaxis_title=_("loss (nats)", lang), legend=dict(orientation="h", y=1.15, x=0),
                      meta={"stage": "loss_curve", "step": step})
    return fig
