"""Every head's attention weights at a glance: the layer × head overview figure.

One ``go.Heatmap`` draws all ``n_layers × n_heads`` weight matrices ``[n × n]`` of one
sentence, tiled into one big matrix with blank (NaN) gutters between the tiles: one trace
draws far faster than 72 subplots (STREAMLIT-NOTES: 144 subplots 6.0 s, one tiled heatmap 1.2 s).

Payload stays small for long inputs: ``z`` is a float32 array (sent as bytes), and the
hover text is not per cell. The axes are *categorical* with one unique label per column
(``head 7 · key 3: sat``) and per row (``layer 2 · query 5: cat``), so the hover names the
layer, head, query token, key token and weight from ``O(n)`` labels instead of ``O(n²)``
strings; tick labels show only ``head h`` / ``layer l`` at the tile centres.

Clicking a heatmap cell does not reach Streamlit's ``on_select`` (streamlit #8760), so a
transparent scatter marker sits on every tile centre (``customdata = [layer, head]``) and
``clickmode="event+select"`` turns a click on it into a selection: see :func:`picked_tile`.

Conventions of :mod:`transformer_core.figures`: tokens HTML-escaped, blocked cells blank
(never a number), Viridis on a fixed 0…1 scale, ``layout.meta`` = ``{"stage": "overview", …}``.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .figures import SEQUENTIAL, label
from .trace import Trace

TILE_TRACE = 1  # curve number of the tile-centre markers


def gutter_for(n: int) -> int:
    """Blank cells between two tiles: about a tenth of a tile, at least one."""
    return max(1, round(n / 10))


def tiled_weights(trace: Trace, batch: int = 0, hide_keys: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """``(z, gutter)``: float32 ``[L·n + (L−1)·g, H·n + (H−1)·g]`` with NaN gutters and NaN blocked cells.

    Tile ``(layer, head)`` starts at row ``layer·(n+g)`` and column ``head·(n+g)``.
    """
    n = len(trace.tokens[batch])
    n_layers, n_heads, g = trace.n_layers, trace.n_heads, gutter_for(n)
    visible = trace.visible(batch).copy()
    if hide_keys is not None:
        visible &= ~np.asarray(hide_keys, bool)[None, :]
    z = np.full((n_layers * (n + g) - g, n_heads * (n + g) - g), np.nan, dtype=np.float32)
    for layer in range(n_layers):
        weights = trace.stage("weights", layer)[batch]  # [head, query_pos, key_pos]
        tiles = np.where(visible[None] & np.isfinite(weights), weights, np.nan).astype(np.float32)
        top = layer * (n + g)
        for head in range(n_heads):
            left = head * (n + g)
            z[top:top + n, left:left + n] = tiles[head]
    return z, g


def axis_labels(tokens, count: int, g: int, name: str, role: str) -> list[str]:
    """One unique category per row/column: ``"layer 2 · query 5: cat"``; gutters ``"·17"``."""
    n = len(tokens)
    out = []
    for i in range(count * (n + g) - g):
        tile, pos = divmod(i, n + g)
        out.append(f"{name} {tile} · {role} {label(tokens[pos], pos)}" if pos < n else f"·{i}")
    return out


def overview_figure(trace: Trace, batch: int = 0, *, hide_keys: np.ndarray | None = None,
                    highlight: tuple[int, int] | None = None, height: int = 640) -> go.Figure:
    """All layers × heads of one sentence's attention weights as one tiled heatmap.

    ``hide_keys`` (bool ``[key_pos]``) blanks chosen key columns in every tile (weights are
    not renormalised). ``highlight = (layer, head)`` outlines that tile.
    Traces: 0 = the heatmap, 1 = transparent tile-centre markers (``customdata [layer, head]``).
    """
    tokens = trace.tokens[batch]
    n, n_layers, n_heads = len(tokens), trace.n_layers, trace.n_heads
    z, g = tiled_weights(trace, batch, hide_keys)
    xs = axis_labels(tokens, n_heads, g, "head", "key")
    ys = axis_labels(tokens, n_layers, g, "layer", "query")
    mid = (n - 1) // 2  # centre cell of a tile
    heat = go.Heatmap(
        z=z, x=xs, y=ys, zmin=0.0, zmax=1.0, colorscale=SEQUENTIAL, hoverongaps=False,
        hovertemplate="%{y}<br>%{x}<br>weight %{z:.4f}<extra></extra>",
        colorbar=dict(title=dict(text="weight", side="right"), thickness=10, len=0.9),
    )
    cells = [(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    centres = go.Scatter(
        x=[xs[h * (n + g) + mid] for _, h in cells], y=[ys[lay * (n + g) + mid] for lay, _ in cells],
        customdata=np.array(cells, dtype=np.int16), mode="markers", showlegend=False, name="open",
        marker=dict(size=max(10, min(28, 2 * n)), opacity=0, color="white"),
        selected=dict(marker=dict(opacity=0)), unselected=dict(marker=dict(opacity=0)),
        hovertemplate="layer %{customdata[0]}, head %{customdata[1]}<br><b>click to open</b><extra></extra>",
    )
    # white bands over the gutters: tiles stay apart even where their edges are blank (masked, grey)
    shapes = [dict(type="rect", xref="x", yref="paper", x0=h * (n + g) - g - 0.5, x1=h * (n + g) - 0.5, y0=0, y1=1,
                   fillcolor="white", line=dict(width=0)) for h in range(1, n_heads)]
    shapes += [dict(type="rect", xref="paper", yref="y", y0=lay * (n + g) - g - 0.5, y1=lay * (n + g) - 0.5,
                    x0=0, x1=1, fillcolor="white", line=dict(width=0)) for lay in range(1, n_layers)]
    if highlight is not None:
        lay, h = highlight
        shapes.append(dict(type="rect", xref="x", yref="y", x0=h * (n + g) - 0.5 - g / 2, x1=h * (n + g) + n - 0.5 + g / 2,
                           y0=lay * (n + g) - 0.5 - g / 2, y1=lay * (n + g) + n - 0.5 + g / 2,
                           line=dict(color="#ff4b4b", width=3)))
    layout = dict(
        meta={"stage": "overview", "batch": batch, "n_layers": n_layers, "n_heads": n_heads, "n": n, "gutter": g,
              "highlight": list(highlight) if highlight is not None else None},
        height=height, margin=dict(l=10, r=10, t=40, b=10), plot_bgcolor="#d9d9d9", shapes=shapes,
        clickmode="event+select", hovermode="closest", dragmode="zoom",
        hoverdistance=1,  # a tile-centre marker answers only under itself; elsewhere the cell under the cursor
        xaxis=dict(type="category", tickmode="array", tickvals=[xs[h * (n + g) + mid] for h in range(n_heads)],
                   ticktext=[f"head {h}" for h in range(n_heads)], side="top", showgrid=False, zeroline=False,
                   tickangle=0, automargin=True),
        yaxis=dict(type="category", tickmode="array", tickvals=[ys[lay * (n + g) + mid] for lay in range(n_layers)],
                   ticktext=[f"layer {lay}" for lay in range(n_layers)], autorange="reversed", showgrid=False,
                   zeroline=False, automargin=True),
    )
    return go.Figure(data=[heat, centres], layout=layout)


def picked_tile(points: list[dict] | None, n_heads: int = 12) -> tuple[int, int] | None:
    """``(layer, head)`` of the first selected tile-centre marker in a Streamlit selection, or None.

    ``points`` is ``event["selection"]["points"]`` (plain dicts); points of other traces
    (the heatmap) are ignored. Reads ``customdata``, else the marker index (layer-major).
    """
    for point in points or []:
        if point.get("curve_number", TILE_TRACE) != TILE_TRACE:
            continue
        custom = point.get("customdata")
        if isinstance(custom, (list, tuple)) and len(custom) >= 2:
            return int(custom[0]), int(custom[1])
        index = point.get("point_index", point.get("point_number"))
        if isinstance(index, int):
            return divmod(index, n_heads)
    return None
