"""Figures of what attention moves across layers: rollout / flow beside the last layer's raw mean, and head-type
scores laid over the layer × head overview.

Conventions of :mod:`transformer_core.figures.stage`: positions as axis categories and tokens as
escaped tick labels, Viridis, ``layout.meta.stage`` names what is drawn and the first trace's
``z`` holds its values.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..text.i18n import N_, _
from .stage import SEQUENTIAL, TITLE_STANDOFF, fitted_positions, label, short_label
from .text_size import display_width, wrap

VIEW_TITLES = {
    "rollout": N_("Attention rollout"),
    "flow": N_("Attention flow (maximum flow, rows normalised)"),
    "flow_raw": N_("Attention flow, raw (maximum flow in capacity units)"),
}
VIEW_UNITS = {  # the colour bar's title: what the numbers of the left matrix are (the right one is a share)
    "rollout": N_("share (rows sum to 1)"),
    "flow": N_("share of the row's flow (rows sum to 1)"),
    "flow_raw": N_("flow (capacity units); right: share"),
}


def across_layers_figure(values: np.ndarray, last_mean: np.ndarray, tokens, view: str, *, batch: int = 0,
                         last_layer: int = 5, height: int = 430, width_px: int = 820) -> go.Figure:
    """``values [n, n]`` (rollout or flow: rows = output positions after the last layer, columns = input
    tokens) beside ``last_mean [n, n]`` (the last layer's weights averaged over heads), on one colour range.

    Traces: 0 = ``values`` (``z``), 1 = ``last_mean``; one colour bar, 0 to the largest value of
    either, titled with the unit of ``view`` (:data:`VIEW_UNITS`: rollout and flow are shares whose rows sum
    to 1, raw flow is in capacity units). ``layout.meta``: ``{"stage": view, "batch", "n", "zrange",
    "last_layer"}``.

    Raises:
        ValueError: unknown view or shapes that do not match ``tokens``.
    """
    if view not in VIEW_TITLES:
        raise ValueError(f"unknown view {view!r}; choose one of {', '.join(VIEW_TITLES)}")
    values, last_mean = np.asarray(values, np.float32), np.asarray(last_mean, np.float32)
    n = len(tokens)
    if values.shape != (n, n) or last_mean.shape != (n, n):
        raise ValueError(f"{n} tokens for matrices of shapes {values.shape} and {last_mean.shape}")
    top = float(np.nanmax([np.nanmax(values), np.nanmax(last_mean)])) if n else 1.0
    zrange = (0.0, top if top > 0 else 1.0)
    labels = [label(t, i) for i, t in enumerate(tokens)]
    ticks = [short_label(t, i) for i, t in enumerate(tokens)]
    # every k-th label where one per row or column would not fit (at 134 tokens the query labels ran into
    # one grey block): the plot is about the figure's height less the input labels under it, and half its width
    font = 10
    depth = max((display_width(t) for t in ticks), default=1) * 6.5 + 30 if n > 8 else 30
    # (font + 2: the page's own font, not the figures' system font, draws these labels a little larger)
    rows_shown = fitted_positions(n, height - 50 - depth, font + 2)
    cols_shown = fitted_positions(n, (width_px - 300) / 2, font + 2) if n > 8 else list(range(n))
    # each title wrapped to its half of the figure (flow's long title ran into the right one's)
    titles = [wrap(t, 12, (width_px - 120) / 2, em=0.56) for t in (
        _("{view}: input tokens reaching each output").format(view=_(VIEW_TITLES[view])),
        _("Layer {layer} only: mean weight over heads").format(layer=last_layer))]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.05, subplot_titles=["<br>".join(t) for t in titles])
    for col, (matrix, what) in enumerate(((values, view), (last_mean, _("mean weight"))), start=1):
        fig.add_trace(go.Heatmap(
            z=matrix, x=labels, y=labels, coloraxis="coloraxis", hoverongaps=False, name=what,
            hovertemplate=_("output") + " %{y}<br>" + _("input") + f" %{{x}}<br>{what} %{{z:.4f}}<extra></extra>"),
            row=1, col=col)
        fig.update_xaxes(type="category", tickmode="array", tickvals=[labels[i] for i in cols_shown],
                         ticktext=[ticks[i] for i in cols_shown], side="bottom", tickangle=-90 if n > 8 else 0,
                         tickfont=dict(size=font),
                         title=dict(text=_("input token") if col == 1 else _("key"), standoff=TITLE_STANDOFF),
                         row=1, col=col)
        fig.update_yaxes(type="category", tickmode="array", tickvals=[labels[i] for i in rows_shown],
                         ticktext=[ticks[i] for i in rows_shown], autorange="reversed", showticklabels=col == 1,
                         tickfont=dict(size=font),
                         title=dict(text=_("output position (query)") if col == 1 else "", standoff=TITLE_STANDOFF),
                         row=1, col=col)
    fig.update_layout(
        height=height + 16 * (extra := max(map(len, titles)) - 1), margin=dict(l=10, r=10, t=40 + 16 * extra, b=10),
        plot_bgcolor="#ffffff",
        coloraxis=dict(colorscale=SEQUENTIAL, cmin=zrange[0], cmax=zrange[1],
                       colorbar=dict(thickness=10, len=0.9, title=dict(text=_(VIEW_UNITS[view]), font=dict(size=11)),
                                     ticklabelposition="outside bottom")),
        meta={"stage": view, "batch": batch, "n": n, "zrange": list(zrange), "last_layer": last_layer})
    fig.update_annotations(font_size=12)
    return fig


def score_overlay(fig: go.Figure, scores: np.ndarray, score_name: str, source: str | None = None) -> go.Figure:
    """Lay head-type ``scores [layer, head]`` (in [0, 1]) over an overview figure, in place, and return it.

    A tile fades under a white veil as its score falls (opacity 0.8·(1 − score)) and gets a frame
    whose width grows with the score, so the heads of that type stand out. The tile-centre markers'
    hover gains the score and ``source``, the detector that produced it (English, translated here; e.g.
    :data:`transformer_core.analysis.head_types.SOURCES`). ``layout.meta`` gains ``{"color": score_name,
    "source": source, "scores": [[...]]}``.
    """
    meta = dict(fig.layout.meta)
    m, g = meta["tile"], meta["gutter"]
    scores = np.clip(np.nan_to_num(np.asarray(scores, np.float64)), 0.0, 1.0)
    shapes = list(fig.layout.shapes)
    for (layer, head), s in np.ndenumerate(scores):
        x0, y0 = head * (m + g), layer * (m + g)
        box = dict(type="rect", xref="x", yref="y", x0=x0 - 0.5, x1=x0 + m - 0.5, y0=y0 - 0.5, y1=y0 + m - 0.5)
        shapes.append({**box, "fillcolor": "white", "opacity": round(0.8 * (1 - s), 3), "line": dict(width=0)})
        if s >= 0.25:  # a frame only where the head is at least partly of this type
            shapes.append({**box, "line": dict(color="#d62728", width=round(0.5 + 3.5 * s, 2))})
    marker = fig.data[1]
    marker.customdata = np.column_stack([np.asarray(marker.customdata)[:, :2], scores.reshape(-1)])
    marker.hovertemplate = (_("layer {layer}, head {head}").format(layer="%{customdata[0]}", head="%{customdata[1]}")
                            + "<br>" + _(score_name) + " %{customdata[2]:.2f}"
                            + ("" if source is None else " (" + _(source) + ")") + "<br><b>" + _("click to open")
                            + "</b><extra></extra>")
    fig.layout.shapes = shapes  # assigned: update_layout(meta=…) walks every key of the meta dict as a property path
    fig.layout.meta = {**meta, "color": score_name, "source": source, "scores": scores.round(4).tolist()}
    return fig
