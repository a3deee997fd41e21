"""Figures of what the causal model's heads write (:mod:`transformer_core.analysis.post_ln_writes`), position by
position: each head's direct share of the next token's logit, and the logit lens's probability of the next token.

Pure builders (NumPy in, ``go.Figure`` out). Columns are the positions that have a next token, labelled by their
number (the hover says ``p: id → next``); ``layout.meta["view"]`` is ``"dla"`` or ``"logit_lens"`` (with ``meta["model"] = "causal"``).

Shape legend: layer, head, row, pos.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..text.i18n import _
from .stage import SEQUENTIAL
from .ticks import fitted_positions
from .writes import DIVERGING, _symmetric


def _columns(ids: list[int]) -> list[str]:
    return [f"{p}: {ids[p]} → {ids[p + 1]}" for p in range(len(ids) - 1)]


def _layout(fig: go.Figure, title: str, n_rows: int, columns: list[str], height: int, view: str,
            width_px: float) -> go.Figure:
    # a level number up to two digits is ~15 px wide at 11 px: keep ~21 px between labels (fitted_positions' 1.4 ×)
    ticks = fitted_positions(len(columns), width_px, 15)
    fig.update_layout(
        title=dict(text=title, font=dict(size=13), x=0), height=height, margin=dict(l=110, r=10, t=40, b=10),
        dragmode=False, plot_bgcolor="#d9d9d9",
        # the positions only, level (a rotated "p: id → next" label's box covers its neighbours'); the hover has them
        xaxis=dict(tickmode="array", tickvals=ticks, ticktext=[str(p) for p in ticks], tickangle=0,
                   fixedrange=True, automargin=True, title=dict(text=_("position (hover: token → the next one)"))),
        yaxis=dict(autorange="reversed", fixedrange=True),
        meta={"view": view, "model": "causal", "rows": n_rows, "positions": len(columns)})
    return fig


def head_attribution_figure(heads: np.ndarray, embed: np.ndarray, biases: np.ndarray, ids: list[int], *,
                            height: int = 330, width_px: float = 320.0) -> go.Figure:
    """``heads [pos, layer, head]``, ``embed`` and ``biases`` ``[pos]`` (logit units) as rows × positions: one row a
    head (``L1H3``), then the embeddings and the biases; blue raises the next token's logit, red lowers it.
    ``width_px``: the plot's width on screen (to thin the position labels)."""
    n, n_layers, n_heads = heads.shape
    rows = [f"L{layer}H{head}" for layer in range(n_layers) for head in range(n_heads)]
    z = np.concatenate([heads.reshape(n, -1).T, embed[None], biases[None]]).astype(np.float64)
    names = rows + [_("embeddings"), _("biases")]
    limit = _symmetric(z)
    columns = _columns(ids)
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(n)), y=names, zmid=0, zmin=-limit, zmax=limit, colorscale=DIVERGING, xgap=1, ygap=1,
        customdata=[columns] * len(names),
        hovertemplate="%{y} · %{customdata}<br>" + _("direct effect on the next token's logit") + " %{z:+.2f}"
        + "<extra></extra>", colorbar=dict(title=dict(text=_("logit"), side="right"), thickness=10, len=0.9)))
    return _layout(fig, _("What each head writes: its direct share of the next token's logit"), len(names), columns,
                   height, "dla", width_px)


def next_token_lens_figure(target_prob: np.ndarray, ids: list[int], *, height: int = 230,
                           width_px: float = 220.0) -> go.Figure:
    """``target_prob [row, pos]``: the probability of the next token read from the embeddings and after each layer
    (the last row is the model's output), 0–1. ``width_px``: the plot's width on screen (to thin the position labels)."""
    rows = [_("embeddings")] + [_("after layer {layer}").format(layer=i) for i in range(len(target_prob) - 1)]
    columns = _columns(ids)
    fig = go.Figure(go.Heatmap(
        z=target_prob, x=list(range(len(columns))), y=rows, zmin=0, zmax=1, colorscale=SEQUENTIAL, xgap=1, ygap=1,
        customdata=[columns] * len(rows),
        hovertemplate="%{y} · %{customdata}<br>" + _("p(next token)") + " %{z:.3f}<extra></extra>",
        colorbar=dict(title=dict(text=_("p(next token)"), side="right"), thickness=10, len=0.9)))
    return _layout(fig, _("Logit lens: the next token's probability read after each layer"), len(rows), columns,
                   height, "logit_lens", width_px)
