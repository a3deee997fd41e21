"""Figures of the causal model's next-token predictions: one position's top tokens with an "other" bar
(the bars add up to 1), and a sampled continuation drawn with the loss at every position.

Pure builders from :mod:`transformer_core.analysis.predictions`; ``layout.meta["stage"]`` is
``predictions`` / ``sample_loss``.
"""
from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go

from ..text.i18n import _

KEPT, OTHER, TARGET = "#08519c", "#bdbdbd", "#2ca02c"


def top_k_figure(bars: list[tuple[str, float]], *, position: int, token: str, target: str | None,
                 temperature: float, k: int | None, p: float | None, height: int = 340,
                 order: str = "hf") -> go.Figure:
    """Horizontal bars of ``[(token, probability), …, ("other", rest)]`` (from ``top_tokens``) predicting
    the token after ``position``; the true next token (``target``) is green when it is among them. With both
    top-k and top-p the title names how they combine (``order``, :data:`~transformer_core.analysis.predictions.
    FILTER_ORDERS`): "top-k 5 → top-p 0.9" (Hugging Face's order: top-p on the k kept, renormalised) or
    "top-k 5 ∩ top-p 0.9" (both on the original probabilities)."""
    names = [b[0] for b in bars]
    probs = [b[1] for b in bars]
    colours = [OTHER if n == "other" else TARGET if n == target else KEPT for n in names]
    joint = " → " if order == "hf" else " ∩ "  # Hugging Face's order, or what both keep
    cut = joint.join(x for x in (f"top-k {k}" if k else "", f"top-p {p:g}" if p else "") if x) or _("all tokens")
    fig = go.Figure(go.Bar(
        x=probs, y=[_("other") if n == "other" else _("token {n}").format(n=n) for n in names], orientation="h",
        marker_color=colours,
        text=[f"{v:.2%}" if v >= 1e-4 else f"{v:.1e}" for v in probs], textposition="outside", cliponaxis=False,
        hovertemplate="%{y}: " + _("probability") + " %{x:.6f}<extra></extra>"))
    after = html.escape(token)
    right = (_("; next token is {token}").format(token=html.escape(target)) if target is not None
             else _("; the end of the sequence"))
    fig.update_layout(
        title=dict(text=_("After position {position} (token {token}{right}) · T = {t} · {cut}").format(
            position=position, token=after, right=right, t=f"{temperature:g}", cut=cut),
                   font=dict(size=13), x=0),
        height=height, margin=dict(l=80, r=50, t=40, b=30), yaxis=dict(autorange="reversed", type="category"),
        xaxis=dict(title=_("probability before top-k/top-p (bars add up to 1)"), range=[0, 1.08], tickformat=".0%"),
        meta={"stage": "predictions", "position": position, "temperature": temperature, "k": k, "p": p, "order": order,
              "sum": float(sum(probs))})
    return fig


def sample_figure(ids: list[int], loss: np.ndarray, n_prompt: int, period: int | None = None,
                  height: int = 300) -> go.Figure:
    """Loss (nats) predicting each token of ``ids`` from the ones before, the sampled continuation
    (after ``n_prompt``) shaded; a dotted line at chance, ln 64, and the repeat's start when ``period``."""
    x = np.arange(1, len(ids))  # loss[t − 1] is for predicting token t
    fig = go.Figure(go.Scatter(
        x=x, y=np.asarray(loss, np.float64), mode="lines+markers", line=dict(color=KEPT),
        text=[str(ids[t]) for t in x],
        hovertemplate=_("token {token} at position {position}: loss {loss} nats").format(
            token="%{text}", position="%{x}", loss="%{y:.3f}") + "<extra></extra>"))
    if len(ids) > n_prompt:
        fig.add_vrect(x0=n_prompt - 0.5, x1=len(ids) - 0.5, fillcolor="#fdd0a2", opacity=0.4, line_width=0,
                      annotation_text=_("sampled"), annotation_position="top left")
    fig.add_hline(y=math.log(64), line=dict(color="#555", dash="dot"), annotation_text=_("chance ln 64"),
                  annotation_position="top right")
    if period is not None and period < len(ids):
        fig.add_vline(x=period - 0.5, line=dict(color="#999", dash="dash"))
    fig.update_layout(
        title=dict(text=_("Loss at every position (nats, T = 1) of the sequence and its sampled continuation"),
                   font=dict(size=13), x=0),
        height=height, margin=dict(l=50, r=10, t=40, b=40), xaxis_title=_("position of the predicted token"),
        yaxis=dict(title=_("loss (nats)"), rangemode="tozero"), showlegend=False,
        meta={"stage": "sample_loss", "n_prompt": n_prompt, "ids": list(map(int, ids))})
    return fig
