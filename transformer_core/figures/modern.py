"""Figures of the "Attention since 2017" page: the positions lab, shared key/value heads, the KV cache's new query
row, sliding-window masks and the online softmax's tiles. Heatmaps are :func:`~transformer_core.figures.stage.heatmap`;
the rest are small Plotly line and scatter charts. Every figure carries ``layout.meta`` (``{"kind": …}``) so tests
can find it, and no NaN or ±inf reaches one (blocked cells are blanked by ``heatmap``'s ``visible``).

Shape legend: query_pos, key_pos, head, kv_head, pos, pair.
"""
from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from ..text.i18n import _
from .stage import DIVERGING, SEQUENTIAL, heatmap, label

PANEL_PX = 300  # four panels across a 1280-px page
# as drawn at 1280×720: one of the positions tab's four score panels, the long-inputs mask, the KV cache's query row
SCORE_PANEL_PX, MASK_PANEL_PX, QUERY_ROW_PX = 195, 335, 560
BAR_BELOW = 66  # heatmap keeps 70 px for a colour bar beside the plot; _small puts it below (4 px)
TILE_LINE = "#1a9641"  # green: not a colour of the red–white–blue or viridis scales
MASK_COLOURS = [[0.0, "#a6a6a6"], [0.5, "#a6a6a6"], [0.5, "#2c7bb6"], [1.0, "#2c7bb6"]]  # blocked, may attend
CURVE_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


def token_labels(tokens) -> list[str]:
    """Escaped unique tick labels ``"0: the"``."""
    return [label(t, i) for i, t in enumerate(tokens)]


def _small(fig: go.Figure, height: int = 320) -> go.Figure:
    """A panel of a row of figures: the colour bar under the plot, the title above it (where the key axis title
    was), heatmap's own left and top margins (room for the tick labels) kept."""
    fig.update_traces(selector=dict(type="heatmap"), colorbar=dict(orientation="h", y=-0.05, yanchor="top",
                                                                   thickness=8, len=1.0, title=None))
    fig.update_xaxes(title=None)
    margin = fig.layout.margin
    # 8 px more on the left: the rotated query title touched the row labels at 1280×720 (four panels a row)
    fig.update_layout(height=height, margin=dict(l=(margin.l or 0) + 8, r=4, t=(margin.t or 0) + 6, b=40),
                      title=dict(yref="container", y=0.99, yanchor="top", x=0.01, xanchor="left", font=dict(size=13),
                                 automargin=False))
    return fig


def score_panel(matrix: np.ndarray, tokens, title: str, zrange: tuple[float, float] | None = None,
                **meta) -> go.Figure:
    """One scheme's raw scores ``[query_pos, key_pos]``, signed colours symmetric around 0: on ``zrange`` if given,
    else on the panel's own range (its colour bar under it)."""
    labels = token_labels(tokens)
    matrix = np.asarray(matrix)
    bound = (max(abs(zrange[0]), abs(zrange[1])) if zrange else float(np.nanmax(np.abs(matrix)))) or 1.0
    # the tokens as ticks, cut to 4 characters ("12: Everyone" squeezed the plot to ~60 px), every k-th where they
    # would touch; the hover names each token whole
    ticks = [html.escape(t if len(t) <= 4 else t[:3] + "…") for t in tokens]
    fig = heatmap(matrix, labels, labels, zrange=(-bound, bound), colorscale=DIVERGING, title=title,
                  meta={"kind": "scores", **meta}, width_px=SCORE_PANEL_PX + BAR_BELOW, height=320, square=True,
                  row_ticks=ticks, col_ticks=ticks, fit_ticks=True)
    return _small(fig)


def distance_figure(curves: dict[str, np.ndarray], names: dict[str, str], query_positions, title: str) -> go.Figure:
    """Score against distance ``m − n`` for each scheme (one colour) and query position (solid, dashed):
    ``curves[scheme]`` ``[len(query_positions), distances]``."""
    fig = go.Figure()
    for colour, (scheme, rows) in zip(CURVE_COLOURS, curves.items()):
        for j, (m, row) in enumerate(zip(query_positions, np.asarray(rows))):
            fig.add_trace(go.Scatter(x=list(range(len(row))), y=row.tolist(), mode="lines",
                                     name=_("{scheme}, query at {m}").format(scheme=names[scheme], m=m),
                                     line=dict(color=colour, dash="solid" if j == 0 else "dash", width=2)))
    fig.update_layout(title=title, height=360, meta={"kind": "distance"}, margin=dict(l=4, r=4, t=50, b=4),
                      legend=dict(font=dict(size=11)), xaxis_title=_("distance m − n (key before the query)"),
                      yaxis_title=_("raw score"))
    return fig


def rope_figure(xy: np.ndarray, pairs, positions, thetas, title: str) -> go.Figure:
    """RoPE's turning pairs: for each pair ``i``, the point ``(x_i, x_{i+d/2})`` at every position (the larger dot:
    position 0); each pair's points lie on one circle. ``xy`` ``[pos, pair, 2]``."""
    fig = go.Figure()
    for j, (pair, theta) in enumerate(zip(pairs, thetas)):
        pts = np.asarray(xy)[:, j]
        fig.add_trace(go.Scatter(x=pts[:, 0].tolist(), y=pts[:, 1].tolist(), mode="markers",
                                 name=_("pair {i} (θ = {theta} rad per position)").format(i=pair, theta=f"{theta:.3g}"),
                                 text=[_("position {p}").format(p=p) for p in positions],
                                 hovertemplate="%{text}<br>(%{x:.3f}, %{y:.3f})<extra></extra>",
                                 marker=dict(color=CURVE_COLOURS[j % len(CURVE_COLOURS)],
                                             size=[11] + [6] * (len(pts) - 1))))
    fig.update_layout(title=title, height=420, meta={"kind": "rope"}, margin=dict(l=4, r=4, t=50, b=4),
                      xaxis_title=_("feature i"), yaxis_title=_("feature i + d_head/2"),
                      legend=dict(font=dict(size=11), orientation="h", yanchor="top", y=-0.18, x=0))
    fig.update_yaxes(scaleanchor="x", scaleratio=1)
    return fig


def mask_panel(mask: np.ndarray, rows: list[str], cols: list[str], title: str, **meta) -> go.Figure:
    """A boolean mask in two colours (blue may attend, grey blocked)."""
    mask = np.asarray(mask, bool)
    fig = heatmap(mask.astype(np.float32), rows, cols, zrange=(0.0, 1.0), colorscale=MASK_COLOURS, title=title,
                  meta={"kind": "mask", **meta}, width_px=MASK_PANEL_PX + BAR_BELOW, height=340, square=True,
                  fit_ticks=True)
    fig.update_traces(selector=dict(type="heatmap"), colorbar=dict(tickvals=[0.25, 0.75],
                                                                   ticktext=[_("0 = blocked"), _("1 = may attend")]))
    return _small(fig, 340)


def groups_figure(n_heads: int, n_kv_heads: int, title: str) -> go.Figure:
    """Which key/value head each query head reads: a ``[query head, kv head]`` yes/no matrix."""
    group = n_heads // n_kv_heads
    reads = np.zeros((n_heads, n_kv_heads), bool)
    reads[np.arange(n_heads), np.arange(n_heads) // group] = True
    fig = heatmap(reads.astype(np.float32), [f"q{h}" for h in range(n_heads)], [f"kv{g}" for g in range(n_kv_heads)],
                  zrange=(0.0, 1.0), colorscale=MASK_COLOURS, title=title, row_title=_("query head"),
                  col_title=_("key/value head"), meta={"kind": "groups", "n_kv_heads": n_kv_heads}, width_px=PANEL_PX)
    fig.update_traces(selector=dict(type="heatmap"), showscale=False)
    return _small(fig, 340)


def query_row_figure(weights: np.ndarray, key_labels: list[str], title: str, **meta) -> go.Figure:
    """The new token's weights ``[head, key_pos]``: one row per head, over every cached key."""
    weights = np.asarray(weights, np.float32)
    fig = heatmap(weights, [f"h{h}" for h in range(weights.shape[0])], key_labels, zrange=(0.0, 1.0),
                  colorscale=SEQUENTIAL, title=title, row_title=_("head"), col_title=_("cached key"),
                  meta={"kind": "query_row", **meta}, width_px=QUERY_ROW_PX + BAR_BELOW, height=300,
                  fit_ticks=True)
    return _small(fig, 300)


def tile_figure(scores: np.ndarray, visible: np.ndarray, labels: list[str], rows: tuple[int, int],
                cols: tuple[int, int], done: list[tuple[tuple[int, int], tuple[int, int], bool]], title: str,
                **meta) -> go.Figure:
    """The score matrix with the current tile outlined (thick green), tiles already done outlined thin and
    skipped (fully blocked) tiles marked ×; blocked cells blank."""
    scores = np.asarray(scores, np.float32)
    bound = float(np.abs(scores[np.asarray(visible, bool)]).max(initial=0.0)) or 1.0
    fig = heatmap(scores, labels, labels, visible=visible, zrange=(-bound, bound), colorscale=DIVERGING, title=title,
                  meta={"kind": "tiles", **meta}, width_px=PANEL_PX * 2, square=True)
    shapes = []
    for (r0, r1), (c0, c1), skipped in done:
        shapes.append(dict(type="rect", xref="x", yref="y", x0=c0 - 0.5, x1=c1 - 0.5, y0=r0 - 0.5, y1=r1 - 0.5,
                           line=dict(color=TILE_LINE, width=1, dash="dot" if skipped else "solid")))
    shapes.append(dict(type="rect", xref="x", yref="y", x0=cols[0] - 0.5, x1=cols[1] - 0.5, y0=rows[0] - 0.5,
                       y1=rows[1] - 0.5, line=dict(color=TILE_LINE, width=4)))
    fig.update_layout(shapes=shapes)
    fig.update_xaxes(type="linear", tickvals=list(range(len(labels))), ticktext=labels, range=[-0.5, len(labels) - 0.5])
    fig.update_yaxes(type="linear", tickvals=list(range(len(labels))), ticktext=labels,
                     range=[len(labels) - 0.5, -0.5])
    fig.update_traces(selector=dict(type="heatmap"), x=list(range(len(labels))), y=list(range(len(labels))))
    return _small(fig, 460)
