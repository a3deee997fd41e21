"""Plotly figure builders: pure functions from a :class:`~transformer_core.trace.Trace` to ``go.Figure``.

Shared by the app's pages, the export command and the tests, so a saved file matches the
screen. Conventions (plotly.py #4215: categorical axes merge repeated labels):

* axes are positions ``0 … n-1``; tokens are only tick labels, so repeated tokens stay apart;
* token text is HTML-escaped everywhere Plotly would render markup;
* blocked (masked) cells are ``None`` (blank) with a "masked" hover, never ±inf or −1e9;
* a query row with no visible key is marked "⊘" on its tick label and in the hover;
* colour scales are colour-blind safe (Viridis; RdBu for signed values) and shared by
  every head of one stage (pass ``zrange``);
* ``layout.meta`` records ``{"stage", "head", "layer", "batch"}`` for tests and exports.
"""
from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .trace import PATTERN_STAGES, Trace

SEQUENTIAL = "Viridis"
DIVERGING = "RdBu_r"
SIGNED_STAGES = {"scores", "masked_scores", "q", "k", "v", "context", "concat", "projected", "output",
                 "embeddings", "hidden"}
STAGE_TITLES = {
    "q": "Queries Q", "k": "Keys K", "v": "Values V",
    "scores": "Raw scores QKᵀ/√d_k", "masked_scores": "Masked scores",
    "weights": "Attention weights softmax(·)", "context": "Per-head context weights·V",
}
EMPTY_ROW_MARK = "⊘"
MAX_TICKS = 24  # 128 labelled ticks per axis made a 128² figure take ~5 s to draw in Chromium
TOKEN_HOVER_MAX_CELLS = 64 * 64  # above this, hovers name positions, not tokens (payload)


def label(token: str, pos: int) -> str:
    """Tick label for one position, HTML-escaped: ``"3: &lt;b&gt;"``."""
    return f"{pos}: {html.escape(token)}"


def blank_blocked(matrix: np.ndarray, visible: np.ndarray | None = None) -> np.ndarray:
    """float32 copy with NaN where a cell is blocked or not finite.

    Plotly ≥ 6 sends float32 arrays as base64 bytes (half the payload of float64, a
    fraction of JSON lists) and plotly.js draws NaN cells of a typed array as gaps, so a
    blocked cell is blank, never a number such as −1e9.
    """
    m = np.array(matrix, dtype=np.float32)
    keep = np.isfinite(m) if visible is None else np.isfinite(m) & np.asarray(visible, bool)
    m[~keep] = np.nan
    return m


def stage_range(trace: Trace, stage: str, batch: int, layer: int = 0,
                heads: list[int] | None = None) -> tuple[float, float]:
    """Colour range shared by the shown heads of one stage (all heads by default; visible, finite cells only)."""
    data = trace.stage(stage, layer)[batch]  # [head, rows, cols]
    if heads is not None:
        data = data[heads]
    if stage in PATTERN_STAGES:
        data = data[:, trace.visible(batch)]
    data = data[np.isfinite(data)]
    if data.size == 0 or stage in ("weights", "dropped_weights") and data.max() <= 1.0:
        return (0.0, 1.0)  # probabilities: one fixed scale, comparable across figures and slides
    if stage in SIGNED_STAGES:
        bound = float(np.abs(data).max()) or 1.0
        return (-bound, bound)
    return (0.0, float(data.max()) or 1.0)


def tick_positions(n: int) -> list[int]:
    """Positions to label on an axis of ``n``: all of them up to MAX_TICKS, else every k-th."""
    step = -(-n // MAX_TICKS)  # ceil
    return list(range(0, n, step))


def heatmap(matrix: np.ndarray, row_labels: list[str], col_labels: list[str], *,
            visible: np.ndarray | None = None, empty_rows: np.ndarray | None = None,
            zrange: tuple[float, float] | None = None, colorscale: str = SEQUENTIAL,
            title: str = "", meta: dict | None = None, row_title: str = "query", col_title: str = "key",
            height: int | None = None, show_scale: bool = True,
            empty_note: str = "no visible key: weights 0") -> go.Figure:
    """One labelled heatmap of a 2-D matrix ``[rows, cols]``.

    ``visible`` (bool, same shape) blanks blocked cells; ``empty_rows`` (bool ``[rows]``)
    marks rows with no visible key. Labels must already be escaped (see :func:`label`).
    """
    matrix = np.asarray(matrix, dtype=np.float32)
    n_rows, n_cols = matrix.shape
    empty_rows = np.zeros(n_rows, bool) if empty_rows is None else np.asarray(empty_rows, bool)
    ticks_y = [f"{EMPTY_ROW_MARK} {t}" if e else t for t, e in zip(row_labels, empty_rows)]
    blocked = np.zeros_like(matrix, bool) if visible is None else ~np.asarray(visible, bool)
    zmin, zmax = zrange if zrange else (None, None)
    heat = dict(
        type="heatmap", name="values", z=blank_blocked(matrix, visible), x=np.arange(n_cols), y=np.arange(n_rows),
        zmin=zmin, zmax=zmax, colorscale=colorscale, hoverongaps=False, xgap=1, ygap=1, showscale=show_scale,
        colorbar=dict(orientation="h", thickness=8, len=1.0, y=-0.02, yanchor="top", tickfont=dict(size=10)),
    )
    if n_rows * n_cols <= TOKEN_HOVER_MAX_CELLS:
        # token text per cell: [query label, key label]
        heat["customdata"] = np.dstack(np.broadcast_arrays(np.asarray(row_labels, object)[:, None],
                                                           np.asarray(col_labels, object)[None, :]))
        where = f"{row_title} %{{customdata[0]}}<br>{col_title} %{{customdata[1]}}"
    else:  # large matrices: positions only (the tick labels carry the tokens), to keep the payload small
        where = f"{row_title} position %{{y}}<br>{col_title} position %{{x}}"
    heat["hovertemplate"] = where + "<br>value %{z:.4f}<extra></extra>"
    traces = [heat]
    # Blank cells have no hover of their own: a one-colour heatmap over them says why. (One image
    # per trace: invisible scatter markers per cell cost ~10 s per 128² figure in Chromium.)
    blank = ~np.isfinite(heat["z"])
    for cells, text, colour in ((blocked & ~empty_rows[:, None], "masked", "#d9d9d9"),
                                (blank & empty_rows[:, None], empty_note, "#b8b8b8")):
        if cells.any():
            traces.append(dict(
                type="heatmap", z=np.where(cells, np.float32(1), np.float32(np.nan)),
                x=np.arange(n_cols), y=np.arange(n_rows), colorscale=[[0, colour], [1, colour]],
                showscale=False, hoverongaps=False, xgap=1, ygap=1, name=text,
                hovertemplate=f"{row_title} position %{{y}}<br>{col_title} position %{{x}}<br>{text}<extra></extra>"))
    # ticklabeloverflow="allow" skips Plotly's per-label overflow check (most of the draw time at
    # 128 tokens in a browser profile). Chromium still lays out every tick label: beyond
    # MAX_TICKS, label every k-th position (the hover names them all).
    xticks, yticks = tick_positions(n_cols), tick_positions(n_rows)
    size = height or max(260, min(720, 110 + 24 * n_rows))
    layout = dict(
        title=dict(text=title, font=dict(size=14)), meta=meta or {}, height=size,
        margin=dict(l=10, r=10, t=40 if title else 10, b=40 if show_scale else 10), plot_bgcolor="#ffffff",
        xaxis=dict(tickmode="array", tickvals=xticks, ticktext=[col_labels[i] for i in xticks], side="top",
                   title=dict(text=col_title), tickangle=-45, showgrid=False, zeroline=False,
                   ticklabeloverflow="allow"),
        yaxis=dict(tickmode="array", tickvals=yticks, ticktext=[ticks_y[i] for i in yticks], autorange="reversed",
                   title=dict(text=row_title), showgrid=False, zeroline=False, ticklabeloverflow="allow"),
    )
    fig = go.Figure(data=traces, layout=layout)
    return fig


def stage_figure(trace: Trace, stage: str, *, batch: int = 0, head: int = 0, layer: int = 0,
                 zrange: tuple[float, float] | None = None, hide_keys: np.ndarray | None = None,
                 show_scale: bool = True) -> go.Figure:
    """The heatmap of one stage, one head, one sentence.

    ``scores``/``masked_scores``/``weights``: ``[query_pos, key_pos]``. ``q``/``k``/``v``/``context``:
    ``[pos, d_head]``. ``hide_keys`` (bool ``[key_pos]``) blanks chosen key columns (e.g. special tokens).

    Raises:
        KeyError: unknown stage.
    """
    data = trace.stage(stage, layer)[batch, head]
    tokens = trace.tokens[batch]
    rows = [label(t, i) for i, t in enumerate(tokens)]
    meta = {"stage": stage, "head": head, "layer": layer, "batch": batch}
    if zrange is None:
        zrange = stage_range(trace, stage, batch, layer)
    colorscale = DIVERGING if stage in SIGNED_STAGES else SEQUENTIAL
    if stage in PATTERN_STAGES:
        visible = trace.visible(batch).copy()
        if hide_keys is not None:
            visible &= ~np.asarray(hide_keys, bool)[None, :]
        # raw scores are shown whole: masking has not happened yet at that stage
        return heatmap(data, rows, rows, visible=None if stage == "scores" else visible,
                       empty_rows=None if stage == "scores" else trace.empty_rows(batch),
                       zrange=zrange, colorscale=colorscale, meta=meta, title=f"head {head}", show_scale=show_scale)
    cols = [f"d{j}" for j in range(data.shape[-1])]
    return heatmap(data, rows, cols, zrange=zrange, colorscale=colorscale, meta=meta,
                   title=f"head {head}", row_title="position", col_title="dimension", show_scale=show_scale)


def figure_filename(stage: str, head: int | None, layer: int | None, tokens: tuple[str, ...], ext: str = "") -> str:
    """A meaningful file name: ``weights_L0_H3_the-cat-sat`` (+ ``.ext``)."""
    words = [t for t in tokens if t.isalnum()][:4] or ["text"]
    slug = "-".join(w.lower() for w in words)[:40]
    parts = [stage] + ([f"L{layer}"] if layer is not None else []) + ([f"H{head}"] if head is not None else []) + [slug]
    return "_".join(parts) + (f".{ext}" if ext else "")


def chart_config(filename: str, fmt: str = "png") -> dict:
    """``st.plotly_chart``/``fig.show`` config: the modebar camera saves a slide-sized image."""
    return {"displaylogo": False,
            "toImageButtonOptions": {"format": fmt, "filename": filename, "width": 1280, "height": 720, "scale": 2}}
