"""Every head of one stage at a glance: the heads' matrices tiled into ONE Plotly heatmap.

One figure instead of one chart per head, because the browser pays ~0.1–0.3 s of scripting
per chart whatever its size (STREAMLIT-NOTES, "Drawing cost": 32 heads of 13² as 32 charts
3.7 s, as one tiled heatmap 0.21 s). Heads are laid out in a grid (``n_cols`` across) with
blank (NaN) gutters; each tile is the stage's matrix of one head:

* ``scores`` / ``masked_scores`` / ``weights``: ``[query_pos, key_pos]``;
* ``q`` / ``k`` / ``v`` / ``context``: ``[pos, d_head]``.

Long inputs are pooled (above :data:`MAX_TILE` cells per tile side): a cell then shows the
largest weight of its block (so sharp patterns stay visible) or, for signed stages, the mean.
Axes are categorical with one unique label per row and column (an invisible per-tile prefix
keeps the categories of tile rows apart), so the hover names the tokens from ``O(n)``
strings; the head of each tile is written above it.

A click on a heatmap cell does not reach Streamlit's ``on_select`` (streamlit #8760), so a
transparent marker sits on each tile's centre (``customdata = head``), and
``clickmode="event+select"`` turns a click on it into a selection: see :func:`picked_head`.
The figure does not depend on which head is focused, so it stays byte-identical (and is not
resent) when the learner focuses another head.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .stage import DIVERGING, SCREEN_ONLY_LINE, SEQUENTIAL, SIGNED_STAGES, fitted_positions, label, short_label
from .overview import block_reduce, gutter_for, pool_for
from ..analysis.shared_kv import trace_kv_heads
from ..records.trace import PATTERN_STAGES, Trace
from ..text.i18n import N_, _, pgettext

MAX_TILE = 64  # cells per tile side; a tile is ~80 px wide on screen, so more could not be seen anyway
MARKER_TRACE = 1  # curve number of the tile-centre markers
MASKED_GREY = "#d9d9d9"  # blocked cells: the same grey as the focused figure's (stage.heatmap)
# a tile title's colour names its key/value head's group when query heads share them (Okabe–Ito, dark enough on white)
KV_GROUP_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#8a6d00", "#56B4E9", "#E69F00", "#000000")
_ROW_TAG, _COL_TAG = "\u200b", "\u2060"  # invisible characters that make each tile row's/column's labels unique


def _pooled_labels(tokens, n: int, step: int, role: str) -> list[str]:
    """One label per pooled cell: ``"query 3: cat"`` or ``"queries 10–11: the cat"``."""
    if step == 1:
        return [f"{_(role)} {label(tokens[i], i)}" for i in range(n)]
    out = []
    for cell in range(-(-n // step)):
        first, last = cell * step, min(n, (cell + 1) * step) - 1
        words = " ".join(tokens[first:last + 1])
        out.append(_("{role} positions {first}–{last}: {words}").format(
            role=_(role), first=first, last=last, words=label(words[:40], first).split(": ", 1)[1]))
    return out


def heads_figure(trace: Trace, stage: str, *, batch: int = 0, layer: int = 0,
                 zrange: tuple[float, float] | None = None, hide_keys: np.ndarray | None = None,
                 n_cols: int = 4, max_tile: int = MAX_TILE, tile_px: int = 78, focus: int | None = None,
                 labels: bool = False) -> go.Figure:
    """All heads of one stage of one sentence of ``trace`` as tiles of one heatmap (see :func:`tiled_heads`).

    ``hide_keys``: bool ``[key_pos]``, key columns to blank (pattern stages).

    Raises:
        KeyError: unknown stage or layer.
    """
    visible = None
    if stage in PATTERN_STAGES and stage != "scores":
        visible = trace.visible(batch).copy()
        if hide_keys is not None:
            visible &= ~np.asarray(hide_keys, bool)[None, :]
    data = trace.stage(stage, layer)[batch]
    kv = trace_kv_heads(trace.settings, data.shape[0])  # query heads sharing key/value heads: named in the titles
    return tiled_heads(data, trace.tokens[batch], stage, visible=visible, zrange=zrange,
                       n_cols=n_cols, max_tile=max_tile, tile_px=tile_px,
                       meta={"layer": layer, "batch": batch, **({"kv_head_of": kv} if kv else {})},
                       focus=focus, labels=labels, kv_head_of=kv)


def tiled_heads(data: np.ndarray, tokens, stage: str, *, visible: np.ndarray | None = None,
                zrange: tuple[float, float] | None = None, n_cols: int = 4, max_tile: int = MAX_TILE,
                tile_px: int = 78, meta: dict | None = None, focus: int | None = None,
                labels: bool = False, kv_head_of: list[int] | None = None) -> go.Figure:
    """Every head's matrix as tiles of one heatmap (click a tile centre to focus it).

    Args:
        data: ``[head, query_pos, key_pos]`` (pattern stages) or ``[head, pos, d_head]``.
        tokens: the sentence's tokens (row labels; column labels too for pattern stages).
        stage: stage name; sets the labels, the colour scale and how long inputs are pooled.
        visible: bool ``[query_pos, key_pos]``, True = may attend; other cells are blank.
        zrange: colour range, shared with the focused head's figure (no colour bar here).
        n_cols: tiles per row. ``tile_px``: drawn size of a tile's longer side; sets the height.
        focus: the head drawn large beside the tiles: its tile is framed.
        labels: token tick labels on the left tiles and above the top ones, and a colour bar ("all heads large").
        kv_head_of: the key/value head each query head reads, when heads share them (grouped-query attention):
            each tile's title names it ("head 5 · KV 2") in its group's colour.

    ``layout.meta``: ``{"stage": "heads", "of": stage, "n_heads", "n_cols", "tile": [rows, cols]
    cells per tile, "gutter": [rows, cols], "pool": [rows, cols] tokens per cell}`` plus ``meta``.
    Traces: 0 = the heatmap, 1 = transparent tile-centre markers (``customdata`` = head), 2 (if any cell is
    blocked) = the blocked cells in grey, as in the focused figure.
    """
    data = np.array(data, dtype=np.float32)  # [head, rows, cols]
    n_heads, n_r, n_c = data.shape
    pattern = stage in PATTERN_STAGES or stage.endswith("weights")
    blocked = None if visible is None else np.broadcast_to(~np.asarray(visible, bool)[None], data.shape)
    if visible is not None:
        data = np.where(np.asarray(visible, bool)[None], data, np.nan)
    data[~np.isfinite(data)] = np.nan
    step_r, step_c = pool_for(n_r, max_tile), pool_for(n_c, max_tile)
    peak = "weights" in stage or stage == "norms"  # pooled by block maximum: sharp patterns stay visible
    tiles = block_reduce(data, step_r, step_c, "max" if peak else "mean")  # [head, m_r, m_c]
    m_r, m_c = tiles.shape[1:]
    n_cols = max(1, min(n_cols, n_heads))
    n_rows = -(-n_heads // n_cols)
    g_c = gutter_for(m_c)
    side = max(m_r, m_c)  # cells along a tile's longer side, drawn ``tile_px`` wide
    g_r = max(gutter_for(m_r), -(-21 * side // tile_px))  # ~21 px above each tile: its "head h" title clear of the
    # focus frame of the tile above (16 px let the frame cross the title)
    z = np.full((n_rows * (m_r + g_r) - g_r, n_cols * (m_c + g_c) - g_c), np.nan, dtype=np.float32)
    for head in range(n_heads):
        r, c = divmod(head, n_cols)
        z[r * (m_r + g_r):r * (m_r + g_r) + m_r, c * (m_c + g_c):c * (m_c + g_c) + m_c] = tiles[head]

    row_role, col_role = ("query", "key") if pattern else ("position", "")
    cell_rows = _pooled_labels(tokens, n_r, step_r, row_role)
    cell_cols = (_pooled_labels(tokens, n_c, step_c, col_role) if pattern
                 else [f"d{j * step_c}" + (f"–d{min(n_c, (j + 1) * step_c) - 1}" if step_c > 1 else "")
                       for j in range(m_c)])
    ys = [(_ROW_TAG * r + cell_rows[i]) if i < m_r else f"·r{r}.{i}"
          for r in range(n_rows) for i in range(m_r + g_r)][:z.shape[0]]
    xs = [(_COL_TAG * c + cell_cols[j]) if j < m_c else f"·c{c}.{j}"
          for c in range(n_cols) for j in range(m_c + g_c)][:z.shape[1]]
    signed = stage in SIGNED_STAGES
    what = _(N_("largest value of the block") if step_r > 1 and stage == "norms"
             else N_("largest weight of the block") if step_r > 1 and "weights" in stage
             else N_("mean of the block") if step_r > 1 or step_c > 1 else N_("value"))
    heat = go.Heatmap(
        z=z, x=xs, y=ys, zmin=zrange[0] if zrange else None, zmax=zrange[1] if zrange else None,
        colorscale=DIVERGING if signed else SEQUENTIAL, showscale=labels, hoverongaps=False, xgap=0, ygap=0,
        colorbar=dict(thickness=10, len=0.6, y=1, yanchor="top", tickfont=dict(size=10)),
        hovertemplate=f"%{{y}}<br>%{{x}}<br>{what} %{{z:.4f}}<extra></extra>")
    grey = None
    if blocked is not None and blocked.any():  # a tile cell is grey when every cell of its block is blocked
        shut = block_reduce(blocked.astype(np.float32), step_r, step_c, "mean") == 1.0  # [head, m_r, m_c]
        g = np.full(z.shape, np.nan, dtype=np.float32)
        for head in range(n_heads):
            r, c = divmod(head, n_cols)
            g[r * (m_r + g_r):r * (m_r + g_r) + m_r, c * (m_c + g_c):c * (m_c + g_c) + m_c] = np.where(
                shut[head], np.float32(1), np.float32(np.nan))
        grey = go.Heatmap(z=g, x=xs, y=ys, colorscale=[[0, MASKED_GREY], [1, MASKED_GREY]], zmin=0, zmax=1,
                          showscale=False, hoverongaps=False, xgap=0, ygap=0, name=pgettext("blocked cell", "masked"),
                          hoverinfo="skip")  # never in the way of a click on a tile-centre marker
    centres = [divmod(h, n_cols) for h in range(n_heads)]
    cx = [c * (m_c + g_c) + (m_c - 1) // 2 for _, c in centres]  # centre cell of each tile
    cy = [r * (m_r + g_r) + (m_r - 1) // 2 for r, _ in centres]
    markers = go.Scatter(
        x=[xs[i] for i in cx], y=[ys[i] for i in cy], customdata=np.arange(n_heads, dtype=np.int16), mode="markers", showlegend=False,
        name="focus", marker=dict(size=max(14, int(tile_px * 0.45)), opacity=0, color="white", symbol="square"),
        selected=dict(marker=dict(opacity=0)), unselected=dict(marker=dict(opacity=0)),
        hovertemplate=_("head {head}").format(head="%{customdata}") + "<br><b>" + _("click to focus this head")
        + "</b><extra></extra>")
    def tile_title(h: int) -> tuple[str, dict]:
        if kv_head_of is None:
            return _("head {head}").format(head=h), dict(size=11)
        g = kv_head_of[h]
        return (_("head {head} · KV {kv}").format(head=h, kv=g),
                dict(size=11, color=KV_GROUP_COLOURS[g % len(KV_GROUP_COLOURS)]))

    titles = [dict(x=x, y=r * (m_r + g_r) - 0.5, text=tile_title(h)[0], showarrow=False, yanchor="bottom",
                   font=tile_title(h)[1], xref="x", yref="y")
              for h, ((r, _col), x) in enumerate(zip(centres, cx))]
    width_cells, height_cells = z.shape[1], z.shape[0]
    height = int(height_cells * tile_px / side) + 30
    shapes = []
    if focus is not None and 0 <= focus < n_heads:
        r, c = divmod(focus, n_cols)
        pad = g_c / 2  # half a gutter around the tile (the axis ranges below leave room for it at the edges)
        shapes.append(dict(type="rect", xref="x", yref="y", x0=c * (m_c + g_c) - 0.5 - pad,
                           x1=c * (m_c + g_c) + m_c - 0.5 + pad, y0=r * (m_r + g_r) - 0.5 - pad,
                           y1=r * (m_r + g_r) + m_r - 0.5 + pad, line=dict(color=SCREEN_ONLY_LINE, width=2.5)))  # on screen only
    axis_ticks = {}
    if labels:  # token labels on the left tiles and above the top row of tiles, every k-th where they would touch
        # (a tile's ~tile_px side over its cells; 60 tokens' labels ran together on 380-px tiles)
        rows_at = fitted_positions(m_r, tile_px, 10) if step_r == 1 else []
        cols_at = fitted_positions(m_c, tile_px, 10) if step_c == 1 and pattern else []
        axis_ticks = dict(
            x=dict(showticklabels=bool(cols_at), tickmode="array", side="top", tickangle=-90, tickfont=dict(size=10),
                   tickvals=[xs[c * (m_c + g_c) + j] for c in range(n_cols) for j in cols_at],
                   ticktext=[short_label(tokens[j], j) for c in range(n_cols) for j in cols_at]),
            y=dict(showticklabels=bool(rows_at), tickmode="array", tickfont=dict(size=10),
                   tickvals=[ys[r * (m_r + g_r) + i] for r in range(n_rows) for i in rows_at],
                   ticktext=[short_label(tokens[i], i) for r in range(n_rows) for i in rows_at]))
        height += 80
    layout = dict(
        meta={"stage": "heads", "of": stage, "n_heads": n_heads, "n_cols": n_cols,
              "tile": [m_r, m_c], "gutter": [g_r, g_c], "pool": [step_r, step_c], **(meta or {})},
        # t=48: the modebar (~26 px) sits above the top tiles' titles instead of covering them
        height=max(120, height) + 26, margin=dict(l=4, r=4, t=48, b=4), plot_bgcolor="#ffffff",
        annotations=titles, clickmode="event+select", hovermode="closest", dragmode=False, hoverdistance=1,
        shapes=shapes,
        xaxis={**dict(type="category", showticklabels=False, showgrid=False, zeroline=False,
                      range=[-0.5 - g_c / 2, width_cells - 0.5 + g_c / 2], automargin=True), **axis_ticks.get("x", {})},
        yaxis={**dict(type="category", showticklabels=False, showgrid=False, zeroline=False,
                      range=[height_cells - 0.5 + g_c / 2, -0.5 - g_c / 2], automargin=True),  # top row first
               **axis_ticks.get("y", {})},
    )
    if focus is not None:
        layout["meta"]["focus"] = focus
    return go.Figure(data=[heat, markers] + ([grey] if grey is not None else []), layout=layout)


def picked_head(points: list[dict] | None) -> int | None:
    """The head of the first selected tile-centre marker in a Streamlit selection, or None.

    ``points`` is ``event["selection"]["points"]`` (plain dicts); points of the heatmap are ignored.
    """
    for point in points or []:
        if point.get("curve_number", MARKER_TRACE) != MARKER_TRACE:
            continue
        custom = point.get("customdata")
        if isinstance(custom, (list, tuple)):
            custom = custom[0] if custom else None
        if isinstance(custom, (int, float)):
            return int(custom)
        index = point.get("point_index", point.get("point_number"))
        if isinstance(index, int):
            return index
    return None
