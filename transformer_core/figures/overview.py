"""Every head's attention weights at a glance: the layer × head overview figure.

One ``go.Heatmap`` draws all ``n_layers × n_heads`` weight matrices ``[n × n]`` of one
sentence, tiled into one big matrix with blank (NaN) gutters between the tiles: one trace
draws far faster than 72 subplots (STREAMLIT-NOTES: 144 subplots 6.0 s, one tiled heatmap 1.2 s).

Payload stays small for long inputs: ``z`` is a float32 array (sent as bytes), the hover
text is not per cell, and above :data:`MAX_TILE` tokens a cell shows the largest weight of a
block of tokens (a tile is about 60 px wide on screen: 128 cells could not be seen anyway). The axes are *categorical* with one unique label per column
(``head 7 · key 3: sat``) and per row (``layer 2 · query 5: cat``), so the hover names the
layer, head, query token, key token and weight from ``O(n)`` labels instead of ``O(n²)``
strings; tick labels show only ``head h`` / ``layer l`` at the tile centres.

Clicking a heatmap cell does not reach Streamlit's ``on_select`` (streamlit #8760), so a
transparent scatter marker sits on every tile centre (``customdata = [layer, head]``) and
``clickmode="event+select"`` turns a click on it into a selection: see :func:`picked_tile`.

Conventions of :mod:`transformer_core.figures.stage`: tokens HTML-escaped, blocked cells blank
(never a number), Viridis on a fixed 0…1 scale, ``layout.meta`` = ``{"stage": "overview", …}``.
"""
from __future__ import annotations

import html
import warnings

import numpy as np
import plotly.graph_objects as go

from .stage import SEQUENTIAL, label
from ..records.trace import Trace
from ..text.i18n import _

TILE_TRACE = 1  # curve number of the tile-centre markers
MAX_TILE = 32  # cells per tile side; longer inputs are pooled (a tile is ~55 px wide at 1280 px: more cells could not be seen)


def gutter_for(m: int) -> int:
    """Blank cells between two tiles of ``m`` cells: about a tenth of a tile, at least one."""
    return max(1, round(m / 10))


def pool_for(n: int, max_tile: int = MAX_TILE) -> int:
    """Tokens per overview cell (per side): 1 up to ``max_tile`` tokens, then the smallest step that fits."""
    return max(1, -(-n // max_tile))


def block_reduce(matrix: np.ndarray, step_r: int, step_c: int, how: str) -> np.ndarray:
    """``how`` ∈ {"max", "mean"} over ``step_r × step_c`` blocks of the last two axes, ignoring NaN.

    ``[..., rows, cols]`` → ``[..., ceil(rows/step_r), ceil(cols/step_c)]``; an all-NaN block gives NaN.
    """
    if step_r == step_c == 1:
        return matrix
    *lead, rows, cols = matrix.shape
    m_r, m_c = -(-rows // step_r), -(-cols // step_c)
    padded = np.full((*lead, m_r * step_r, m_c * step_c), np.nan, dtype=np.float32)
    padded[..., :rows, :cols] = matrix
    blocks = padded.reshape(*lead, m_r, step_r, m_c, step_c)  # [..., m_r, step_r, m_c, step_c]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN blocks → NaN, as documented
        reduce = np.nanmax if how == "max" else np.nanmean
        return reduce(blocks, axis=(-3, -1)).astype(np.float32)


def tiled_weights(trace: Trace, batch: int = 0, hide_keys: np.ndarray | None = None,
                  max_tile: int = MAX_TILE, stage: str = "weights") -> tuple[np.ndarray, int, int]:
    """``(z, gutter, pool)``: float32 ``[L·m + (L−1)·g, H·m + (H−1)·g]``, NaN gutters and NaN blocked cells.

    ``m = ceil(n / pool)`` cells per tile side; with ``pool > 1`` a cell is the largest
    weight of a ``pool × pool`` block of (query, key) tokens, so sharp patterns stay visible.
    Tile ``(layer, head)`` starts at row ``layer·(m+g)`` and column ``head·(m+g)``.
    ``stage``: another pattern stage of every layer to tile instead, e.g. ``"norms"``.
    """
    n = len(trace.tokens[batch])
    step = pool_for(n, max_tile)
    m = -(-n // step)
    n_layers, n_heads, g = trace.n_layers, trace.stage(stage, 0).shape[1], gutter_for(m)
    visible = trace.visible(batch).copy()
    if hide_keys is not None:
        visible &= ~np.asarray(hide_keys, bool)[None, :]
    z = np.full((n_layers * (m + g) - g, n_heads * (m + g) - g), np.nan, dtype=np.float32)
    for layer in range(n_layers):
        weights = trace.stage(stage, layer)[batch]  # [head, query_pos, key_pos]
        tiles = block_reduce(np.where(visible[None] & np.isfinite(weights), weights, np.nan).astype(np.float32),
                             step, step, "max")
        top = layer * (m + g)
        for head in range(n_heads):
            left = head * (m + g)
            z[top:top + m, left:left + m] = tiles[head]
    return z, g, step


def axis_labels(tokens, count: int, g: int, name: str, role: str, step: int = 1) -> list[str]:
    """One unique category per row/column: ``"layer 2 · query 5: cat"``, pooled
    ``"layer 2 · queries 10–11: the cat"``; gutters ``"·17"``."""
    n = len(tokens)
    m = -(-n // step)
    out = []
    for i in range(count * (m + g) - g):
        tile, cell = divmod(i, m + g)
        if cell >= m:
            out.append(f"·{i}")
        elif step == 1:
            out.append(f"{_(name)} {tile} · {_(role)} {label(tokens[cell], cell)}")
        else:
            first, last = cell * step, min(n, (cell + 1) * step) - 1
            words = html.escape(" ".join(tokens[first:last + 1]))
            out.append(f"{_(name)} {tile} · " + _("{role} positions {first}–{last}: {words}").format(
                role=_(role), first=first, last=last, words=words[:40]))
    return out


def overview_figure(trace: Trace, batch: int = 0, *, hide_keys: np.ndarray | None = None,
                    highlight: tuple[int, int] | None = None, height: int = 640,
                    max_tile: int = MAX_TILE, tiles: tuple[np.ndarray, int, int] | None = None,
                    n_layers: int | None = None, n_heads: int | None = None, value_name: str = "weight",
                    zmax: float = 1.0, of: str = "weights") -> go.Figure:
    """All layers × heads of one sentence's attention weights as one tiled heatmap.

    ``hide_keys`` (bool ``[key_pos]``) blanks chosen key columns in every tile (weights are
    not renormalised). ``highlight = (layer, head)`` outlines that tile. Inputs longer than
    ``max_tile`` tokens are pooled (block maximum, see :func:`tiled_weights`).
    ``tiles`` = a :func:`tiled_weights` result computed earlier (then ``trace`` need only hold
    the tokens, and ``n_layers``/``n_heads`` are given).
    Traces: 0 = the heatmap, 1 = transparent tile-centre markers (``customdata [layer, head]``).
    ``layout.meta``: ``stage="overview"``, ``batch``, ``n_layers``, ``n_heads``, ``n`` (tokens),
    ``tile`` (cells per tile side), ``gutter``, ``pool`` (tokens per cell side), ``highlight``, ``of``
    (the stage tiled). ``of``/``value_name``/``zmax``: tiles of another stage (``"norms"``, ``"norm"``, its
    largest value), coloured from 0 to ``zmax``.
    """
    tokens = trace.tokens[batch]
    n = len(tokens)
    n_layers, n_heads = n_layers or trace.n_layers, n_heads or trace.n_heads
    z, g, step = tiles if tiles is not None else tiled_weights(trace, batch, hide_keys, max_tile)
    m = -(-n // step)  # cells per tile side
    xs = axis_labels(tokens, n_heads, g, "head", "key", step)
    ys = axis_labels(tokens, n_layers, g, "layer", "query", step)
    mid = (m - 1) // 2  # centre cell of a tile
    value_name = _(value_name)
    what = value_name if step == 1 else _("largest {value} of the {step}×{step} block").format(value=value_name,
                                                                                               step=step)
    heat = go.Heatmap(
        z=z, x=xs, y=ys, zmin=0.0, zmax=zmax, colorscale=SEQUENTIAL, hoverongaps=False,
        hovertemplate=f"%{{y}}<br>%{{x}}<br>{what} %{{z:.4f}}<extra></extra>",
        colorbar=dict(title=dict(text=value_name, side="right"), thickness=10, len=0.9),
    )
    cells = [(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    centres = go.Scatter(
        x=[xs[h * (m + g) + mid] for _, h in cells], y=[ys[lay * (m + g) + mid] for lay, _ in cells],
        customdata=np.array(cells, dtype=np.int16), mode="markers", showlegend=False, name="open",
        marker=dict(size=max(10, min(28, 2 * m)), opacity=0, color="white"),
        selected=dict(marker=dict(opacity=0)), unselected=dict(marker=dict(opacity=0)),
        hovertemplate=_("layer {layer}, head {head}").format(layer="%{customdata[0]}", head="%{customdata[1]}")
        + "<br><b>" + _("click to open") + "</b><extra></extra>",
    )
    # white bands over the gutters: tiles stay apart even where their edges are blank (masked, grey)
    shapes = [dict(type="rect", xref="x", yref="paper", x0=h * (m + g) - g - 0.5, x1=h * (m + g) - 0.5, y0=0, y1=1,
                   fillcolor="white", line=dict(width=0)) for h in range(1, n_heads)]
    shapes += [dict(type="rect", xref="paper", yref="y", y0=lay * (m + g) - g - 0.5, y1=lay * (m + g) - 0.5,
                    x0=0, x1=1, fillcolor="white", line=dict(width=0)) for lay in range(1, n_layers)]
    if highlight is not None:
        shapes.append({**tile_box({"tile": m, "gutter": g}, *highlight), "line": dict(color="#ff4b4b", width=3)})
    layout = dict(
        meta={"stage": "overview", "batch": batch, "n_layers": n_layers, "n_heads": n_heads, "n": n, "tile": m,
              "gutter": g, "pool": step, "highlight": list(highlight) if highlight is not None else None, "of": of},
        height=height, margin=dict(l=64, r=10, t=64, b=10), plot_bgcolor="#d9d9d9", shapes=shapes,
        clickmode="event+select", hovermode="closest", dragmode="zoom",
        hoverdistance=1,  # a tile-centre marker answers only under itself; elsewhere the cell under the cursor
        # explicit ranges: the big transparent markers would otherwise pad the autorange (grey margins)
        xaxis=dict(type="category", range=[-0.5, len(xs) - 0.5], tickmode="array",
                   tickvals=[xs[h * (m + g) + mid] for h in range(n_heads)],
                   ticktext=[_("head {head}").format(head=h) for h in range(n_heads)], side="top", showgrid=False, zeroline=False,
                   tickangle=0, automargin=True),
        yaxis=dict(type="category", range=[len(ys) - 0.5, -0.5], tickmode="array",
                   tickvals=[ys[lay * (m + g) + mid] for lay in range(n_layers)],
                   ticktext=[_("layer {layer}").format(layer=lay) for lay in range(n_layers)], showgrid=False,
                   zeroline=False, automargin=True),
    )
    return go.Figure(data=[heat, centres], layout=layout)


def tile_box(meta: dict, layer: int, head: int, pad: float | None = None) -> dict:
    """The rectangle (data coordinates) of tile ``(layer, head)`` of an :func:`overview_figure` with layout meta
    ``meta``, ``pad`` cells outside the tile (default half a gutter; negative: inside it)."""
    m, g = meta["tile"], meta["gutter"]
    pad = g / 2 if pad is None else pad
    return dict(type="rect", xref="x", yref="y", x0=head * (m + g) - 0.5 - pad, x1=head * (m + g) + m - 0.5 + pad,
                y0=layer * (m + g) - 0.5 - pad, y1=layer * (m + g) + m - 0.5 + pad)


def mark_ablated(fig: go.Figure, heads, clicking: bool = False) -> go.Figure:
    """Frame the tiles of ``heads`` (``(layer, head)`` pairs) of an :func:`overview_figure` with a dashed black line,
    and list them in ``layout.meta["ablated"]``. The tiles still show the intact weights. ``clicking``: a tile click
    ablates or restores its head, so the tile-centre hover says that instead of "click to open".
    Returns ``fig`` (changed in place)."""
    meta = dict(fig.layout.meta)
    heads = sorted({(int(lay), int(h)) for lay, h in heads})
    inset = -min(0.5, 0.15 * meta["tile"])  # inside the tile: a frame at the figure's edge is not clipped
    shapes = list(fig.layout.shapes) + [{**tile_box(meta, lay, h, inset), "line": dict(color="black", width=2,
                                                                                         dash="dash")}
                                        for lay, h in heads]
    if clicking:
        marker = fig.data[TILE_TRACE]
        marker.hovertemplate = marker.hovertemplate.replace(_("click to open"), _("click to ablate or restore"))
    # assigned, not update_layout(meta=…): update_layout walks every key of the meta dict as a property path
    # (hundreds of them here: ~0.1–1.4 s of a MiniLM page's run), assignment takes the dict as one value
    fig.layout.shapes = shapes
    fig.layout.meta = {**meta, "ablated": [list(head) for head in heads]}
    return fig


def picked_tile(points: list[dict] | None, n_heads: int = 12, n_layers: int | None = None) -> tuple[int, int] | None:
    """``(layer, head)`` of the first selected tile-centre marker in a Streamlit selection, or None.

    ``points`` is ``event["selection"]["points"]`` (plain dicts); points of other traces
    (the heatmap) are ignored. Reads ``customdata``, else the marker index (layer-major).
    Anything that is not a tile of the figure (not a list of dicts, numbers that are not whole, a head
    outside ``0…n_heads − 1`` or a layer outside ``0…n_layers − 1``) is None: a browser only sends the
    figure's own markers, so this is a tampered or broken event, never a head to open.
    """
    def tile(layer, head) -> tuple[int, int] | None:
        try:
            if isinstance(layer, bool) or isinstance(head, bool) or int(layer) != layer or int(head) != head:
                return None
        except (TypeError, ValueError, OverflowError):  # None, "a", inf, nan
            return None
        layer, head = int(layer), int(head)
        ok = 0 <= head < n_heads and 0 <= layer and (n_layers is None or layer < n_layers)
        return (layer, head) if ok else None

    if not isinstance(points, list | tuple):
        return None
    for point in points:
        if not isinstance(point, dict) or point.get("curve_number", TILE_TRACE) != TILE_TRACE:
            continue
        custom = point.get("customdata")
        if isinstance(custom, list | tuple) and len(custom) >= 2:
            return tile(custom[0], custom[1])
        index = point.get("point_index", point.get("point_number"))
        if isinstance(index, int) and not isinstance(index, bool):
            return tile(*divmod(index, n_heads)) if index >= 0 else None
    return None
