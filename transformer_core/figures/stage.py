"""Plotly figure builders: pure functions from a :class:`~transformer_core.records.trace.Trace` to ``go.Figure``.

Shared by the app's pages, the export command and the tests, so a saved file matches the
screen. Conventions (plotly.py #4215: categorical axes merge repeated labels):

* axes are positions ``0 … n-1``; tokens are only tick labels, so repeated tokens stay apart;
* token text is HTML-escaped everywhere Plotly would render markup;
* blocked (masked) cells are ``None`` (blank) with a "masked" hover, never ±inf or −1e9;
* a query row with no visible key is marked "⊘" on its tick label and in the hover;
* colour scales are colour-blind safe (Viridis; RdBu for signed values) and shared by
  every head of one stage (pass ``zrange``);
* ``layout.meta`` records ``{"stage", "head", "layer", "batch"}`` for tests and exports; ``"cells": True`` on a
  query × key pattern whose cell clicks mean (query, key).
"""
from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go

from ..records.trace import PATTERN_STAGES, Trace
from ..text.i18n import N_, _
from .cells import add_cell_markers, blank_overlays
from .files import chart_config, figure_filename  # noqa: F401  (re-exported: pages import them from here)
from .focus_layout import FOCUS_WIDTH_PX, caption_height, fit_height, title_and_caption  # noqa: F401  (re-exported)
from .text_size import display_width, text_px, wrap
from .ticks import MAX_TICKS, fitted_positions, labelled_every, tick_positions  # noqa: F401  (re-exported)

SEQUENTIAL = "Viridis"
DIVERGING = "RdBu_r"
SIGNED_STAGES = {"scores", "masked_scores", "q", "k", "v", "context", "concat", "projected", "output",
                 "embeddings", "hidden"}
STAGE_TITLES = {
    # English names, marked for the catalog: translate with _() where shown (Chinese: the tutorials' terms)
    "q": N_("Queries Q"), "k": N_("Keys K"), "v": N_("Values V"),
    "scores": N_("Raw scores QKᵀ/√d_k"), "masked_scores": N_("Masked scores"),
    "weights": N_("Attention weights softmax(·)"), "context": N_("Per-head context weights·V"),
    "norms": N_("Value-weighted norms ‖α·f(x)‖"),
}
STAGE_SHORT = {"q": "q", "k": "k", "v": "v", "scores": N_("score"), "masked_scores": N_("score"), "weights": N_("weight"),
               "context": "context", "norms": "norm"}
EMPTY_ROW_MARK = "⊘"
TICK_CHARS = 12  # longer tokens are cut with "…" in tick labels (plotly.js #2985: a long label squeezes the plot)
GAP_MAX_CELLS = 8  # 1-px gaps only while cells are ≥ ~40 px, so gaps stay under ~5 % of a figure (plotly.py #746)
CELL_MARKERS_MAX = 32  # tokens up to which the focused heatmap carries a click marker per cell
WIDE_TOKENS = 24  # above this, the app draws the focused heatmap across the whole column (wide_height)
CELL_OUTLINE = "#ff2b2b"  # the chosen cell's frame (red: seen on Viridis and on RdBu)
# Selection marks (the explained cell's frame, the focused tile's frame) are drawn in this colour, fully transparent:
# the app's page style shows them (SCREEN_ONLY_CSS), while a saved image has no page style, so the camera's PNG/SVG
# (plotly.js draws a copy of the figure into a file) and kaleido's exports come out clean.
SCREEN_ONLY_LINE = "rgba(255,43,43,0)"
SCREEN_ONLY_CSS = ("<style>.js-plotly-plot .shapelayer path[style*='stroke: rgb(255, 43, 43)']"
                   "{stroke-opacity: 1 !important;}</style>")
# px between an axis title and its tick labels: plotly.js measures from the labels' box to the title's baseline side,
# so the descenders of "key" (above the key labels) and of "query" (turned, pointing at the row labels) need room
# (with 4 px they ran ~1 px into '19: w19' and '6: because')
TITLE_STANDOFF = 9
# A system font, not the page's web font: the camera draws its PNG from an SVG image, which cannot use the page's
# fonts, so with Streamlit's "Source Sans" the saved labels came out wider than laid out and ran into each other.
FONT = "Arial, 'Liberation Sans', Helvetica, sans-serif"


def label(token: str, pos: int) -> str:
    """Tick label for one position, HTML-escaped: ``"3: &lt;b&gt;"``."""
    return f"{pos}: {html.escape(token)}"


def short_label(token: str, pos: int, limit: int = TICK_CHARS) -> str:
    """:func:`label` with the token cut to ``limit`` characters plus "…" (for ticks; the hover keeps it whole)."""
    return label(token if len(token) <= limit else token[:limit - 1] + "…", pos)


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
                heads: list[int] | None = None, fixed: bool = False) -> tuple[float, float]:
    """Colour range shared by the shown heads of one stage (all heads by default; visible, finite cells only).

    Weights: ``(0, largest visible weight)``, so a nearly uniform head (≈ 1/n everywhere) still
    shows its structure; ``fixed=True`` gives ``(0, 1)`` for comparing figures and slides.
    Signed stages: symmetric ``(−b, b)`` around 0. See :func:`range_note` for the colour-bar text.
    """
    data = trace.stage(stage, layer)[batch]  # [head, rows, cols]
    if heads is not None:
        data = data[heads]
    if stage in PATTERN_STAGES:
        data = data[:, informative_cells(trace.visible(batch), stage)]
    return value_range(data, stage, fixed)


def informative_cells(visible: np.ndarray, stage: str) -> np.ndarray:
    """bool ``[query_pos, key_pos]``: the visible cells that set a colour range.

    For weights, a row with one visible key (row 0 under the causal mask) is 1 by construction;
    it would pin every range to 1, so such rows are left out unless nothing else is visible.
    """
    visible = np.asarray(visible, bool)
    if stage not in ("weights", "dropped_weights"):
        return visible
    free = visible & (visible.sum(axis=-1) > 1)[:, None]
    return free if free.any() else visible


def value_range(values: np.ndarray, stage: str, fixed: bool = False) -> tuple[float, float]:
    """:func:`stage_range` for any array of one stage's values (NaN and ±inf ignored)."""
    data = np.asarray(values, dtype=np.float64)
    data = data[np.isfinite(data)]
    if stage in ("weights", "dropped_weights"):
        top = float(data.max()) if data.size else 1.0
        if fixed:
            return (0.0, max(1.0, top))  # dropout can scale weights above 1
        return (0.0, top if top > 0 else 1.0)
    if data.size == 0:
        return (-1.0, 1.0) if stage in SIGNED_STAGES else (0.0, 1.0)
    if stage in SIGNED_STAGES:
        bound = float(np.abs(data).max()) or 1.0
        return (-bound, bound)
    return (0.0, float(data.max()) or 1.0)


def range_note(stage: str, zrange: tuple[float, float], fixed: bool = False) -> str:
    """What the colour range is, for a figure's caption: ``"colours 0 – 0.214 (largest weight shown)"``."""
    low, high = zrange
    if stage in ("weights", "dropped_weights"):
        return (_("colours fixed 0 – 1") if fixed and high == 1.0
                else _("colours 0 – {high} (largest weight in rows with a choice; fixed 0–1 scale to compare)").format(
                    high=f"{high:.3g}"))
    if low == -high:
        return _("colours {low} – {high}, symmetric around 0").format(low=f"{low:.3g}", high=f"{high:.3g}")
    return _("colours {low} – {high}").format(low=f"{low:.3g}", high=f"{high:.3g}")


def _tick_font(n: int) -> int:
    """Tick font size (px) for ``n`` labels on a ~500-px axis (~650 px beyond :data:`WIDE_TOKENS`): never below 10."""
    return 12 if n <= 16 else 11 if n <= 28 else 10


def wide_height(n: int) -> int:
    """Figure height (px) of a focused ``n × n`` heatmap drawn across the whole column (``n >`` :data:`WIDE_TOKENS`):
    about 650 px of cells at 128 tokens on a 1280-px screen, plus the tick labels above and the caption below. Up to
    40 tokens the whole figure, title and caption included (about 620 px), fits the 660 px a 720-px screen shows
    under Streamlit's header, with the sticky answer line (at 680 the causal page's 32-token head was 745 px tall)."""
    return 555 if n <= 40 else 840


def heatmap(matrix: np.ndarray, row_labels: list[str], col_labels: list[str], *,
            visible: np.ndarray | None = None, empty_rows: np.ndarray | None = None,
            zrange: tuple[float, float] | None = None, colorscale: str = SEQUENTIAL,
            title: str = "", meta: dict | None = None, row_title: str = "query", col_title: str = "key",
            height: int | None = None, show_scale: bool = True, scale_title: str = "",
            row_ticks: list[str] | None = None, col_ticks: list[str] | None = None,
            empty_note: str = "no visible key: weights 0", width_px: int = FOCUS_WIDTH_PX,
            customdata: np.ndarray | None = None, square: bool = False, fit_ticks: bool = False,
            hidden: np.ndarray | None = None) -> go.Figure:
    """One labelled heatmap of a 2-D matrix ``[rows, cols]``.

    ``visible`` (bool, same shape) blanks blocked cells; ``empty_rows`` (bool ``[rows]``)
    marks rows with no visible key. Labels must already be escaped and unique (see :func:`label`):
    they are the axis categories, so the hover names both tokens from ``O(n)`` strings.
    ``row_ticks``/``col_ticks`` are the (shorter) tick texts, default the labels themselves.
    ``width_px``: about how wide the figure is drawn; x labels that would not fit turn vertical.
    ``customdata`` (``[rows, cols]``): the values the hover names when ``matrix`` holds rescaled colours.
    ``square``: cells stay square whatever width the browser gives the figure (``scaleanchor``).
    ``fit_ticks``: label every k-th row and column where the figure (``width_px`` × its height) is too small for
    every label (:func:`fitted_positions`; for narrow panels such as the lessons').
    ``hidden`` (bool, same shape): blank cells that are *not* blocked (hidden from view only, e.g. special-token
    keys): the hover says so and gives the cell's value (``customdata`` if given, else ``matrix``).
    """
    matrix = np.asarray(matrix, dtype=np.float32)
    n_rows, n_cols = matrix.shape
    # words in the run's language (a text already translated by the caller stays as it is)
    row_title, col_title, empty_note, value = _(row_title), _(col_title), _(empty_note), _("value")
    empty_rows = np.zeros(n_rows, bool) if empty_rows is None else np.asarray(empty_rows, bool)
    row_ticks, col_ticks = row_ticks or row_labels, col_ticks or col_labels
    ticks_y = [f"{EMPTY_ROW_MARK} {t}" if e else t for t, e in zip(row_ticks, empty_rows)]
    blocked = np.zeros_like(matrix, bool) if visible is None else ~np.asarray(visible, bool)
    hidden = np.zeros_like(blocked) if hidden is None else np.asarray(hidden, bool) & blocked
    blocked &= ~hidden  # hidden cells were computed as usual: not masked
    zmin, zmax = zrange if zrange else (None, None)
    xgap = 1 if n_cols <= GAP_MAX_CELLS else 0
    ygap = 1 if n_rows <= GAP_MAX_CELLS else 0
    xs, ys = list(col_labels), list(row_labels)
    heat = dict(
        type="heatmap", name="values", z=blank_blocked(matrix, visible), x=xs, y=ys,
        zmin=zmin, zmax=zmax, colorscale=colorscale, hoverongaps=False, xgap=xgap, ygap=ygap, showscale=show_scale,
        # tick labels under their ticks: the top one (the largest value) stays below the bar's title
        colorbar=dict(thickness=10, len=0.9, tickfont=dict(size=10), title=dict(text=scale_title, font=dict(size=11)),
                      ticklabelposition="outside bottom"),
        hovertemplate=f"{row_title} %{{y}}<br>{col_title} %{{x}}<br>{value} %{{z:.4f}}<extra></extra>",
    )
    if customdata is not None:  # colours rescaled: the hover names the value itself
        heat["customdata"] = np.asarray(customdata, np.float32)
        heat["hovertemplate"] = (f"{row_title} %{{y}}<br>{col_title} %{{x}}<br>{value} %{{customdata:.4f}}"
                                 "<br>" + _("colour {z} of the row's largest").format(z="%{z:.2f}")
                                 + "<extra></extra>")
    # blank cells have no hover of their own: one-colour heatmaps over them say why (masked, no key, hidden)
    traces = [heat, *blank_overlays(
        blocked=blocked & ~empty_rows[:, None], empty=~np.isfinite(heat["z"]) & empty_rows[:, None], hidden=hidden,
        values=matrix if customdata is None else customdata, xs=xs, ys=ys, xgap=xgap, ygap=ygap,
        row_title=row_title, col_title=col_title, empty_note=empty_note)]
    # ticklabeloverflow="allow" skips Plotly's per-label overflow check (most of the draw time at
    # 128 tokens in a browser profile). Beyond MAX_TICKS, label every k-th position.
    xticks, yticks = tick_positions(n_cols), tick_positions(n_rows)
    longest = max((display_width(html.unescape(col_ticks[i])) for i in xticks), default=1)  # 你好 = 4, as wide as abcd
    size = height or (430 if n_rows <= 24 else 520)
    # Margins made here, not by Plotly's automargin: automargin lays the figure out twice (a third of a
    # focused head's draw in a browser profile, ~100 ms a click). Left: the widest y label, the tick gap,
    # the rotated axis title; top: the x labels (vertical: ~7 px a character) and the axis title.
    x_font, y_font = _tick_font(len(xticks)), _tick_font(len(yticks))
    left = int(max((text_px(ticks_y[i], y_font) for i in yticks), default=0)) + 34
    # horizontal x labels only where each fits its column of the plot (the figure less the y labels and the colour
    # bar; a square plot is no wider than its height allows); otherwise vertical (never overlapping)
    plot_px = width_px - left - 70
    if square:
        plot_px = min(plot_px, size - 110)
    # with a gap of a few px to the next: at d_head 16, "d10d11d12…" touched and read as one word
    angle = 0 if longest * 7 + 6 <= plot_px / max(1, len(xticks)) else -90
    if fit_ticks:  # narrow panels: every k-th label where a label per row or column would not fit
        plot_h = size - ((longest * 7 + 8 if angle else 18) + 34) - 70  # less the labels above and the caption
        if square:  # one cell = one square: the shorter side sets both (the key labels' too)
            plot_h = plot_px = min(plot_h, plot_px)
        if angle:  # horizontal labels fit their columns by construction
            xticks = fitted_positions(n_cols, plot_px, x_font)
        yticks = fitted_positions(n_rows, plot_h, y_font)
    layout = dict(
        # automargin: the title pushes the plot down instead of sitting on the top tick labels
        # a caption under the plot, as in a textbook figure (automargin: room is made for it)
        title=dict(text=title, font=dict(size=13), x=0, xanchor="left", yref="paper", y=0, yanchor="top",
                   automargin=True, pad=dict(t=6)),
        # t: room for the key labels (vertical: ~7 px a character) and the axis title; the modebar (the camera
        # alone, chart_config) sits in the top-right corner above the colour bar, where it covers no label
        meta=meta or {}, height=size, plot_bgcolor="#ffffff", font=dict(family=FONT),
        margin=dict(l=left, r=10, t=(longest * 7 + 8 if angle else 18) + 34, b=10),  # 34: axis title + its gap
        # explicit ranges: the cells' transparent click markers would otherwise pad the autorange (~5 % of the
        # plot on each side, a blank band between the labels and the first row)
        xaxis=dict(type="category", tickmode="array", tickvals=[xs[i] for i in xticks], range=[-0.5, n_cols - 0.5],
                   ticktext=[col_ticks[i] for i in xticks], side="top", title=dict(text=col_title, standoff=TITLE_STANDOFF),
                   tickangle=angle, showgrid=False, zeroline=False, ticklabeloverflow="allow", automargin=False,
                   tickfont=dict(size=x_font)),
        yaxis=dict(type="category", tickmode="array", tickvals=[ys[i] for i in yticks],
                   ticktext=[ticks_y[i] for i in yticks], range=[n_rows - 0.5, -0.5],  # row 0 on top
                   title=dict(text=row_title, standoff=TITLE_STANDOFF),
                   showgrid=False, zeroline=False, ticklabeloverflow="allow", automargin=False,
                   tickfont=dict(size=y_font)),
    )
    if square:  # one cell = one square, the plot shrinks along the longer side (constrain="domain")
        layout["yaxis"].update(scaleanchor="x", scaleratio=1, constrain="domain")
        layout["xaxis"].update(constrain="domain")
    return go.Figure(data=traces, layout=layout)


def outline_cell(fig: go.Figure, query: int, key: int) -> go.Figure:
    """Frame cell ``(query, key)`` of a heatmap built by :func:`heatmap` (positions are the axes' indices).

    The frame is a selection mark, seen on screen only (:data:`SCREEN_ONLY_LINE`): saved images are clean."""
    fig.add_shape(type="rect", xref="x", yref="y", x0=key - 0.5, x1=key + 0.5, y0=query - 0.5, y1=query + 0.5,
                  line=dict(color=SCREEN_ONLY_LINE, width=3), fillcolor="rgba(0,0,0,0)", layer="above", name="chosen cell")
    fig.layout.meta = {**dict(fig.layout.meta or {}), "cell": [query, key]}  # assigned: see overview.mark_ablated
    return fig


def row_scaled(weights: np.ndarray, visible: np.ndarray | None = None) -> np.ndarray:
    """``weights / max_j weights[i, j]`` row by row over the visible keys (rows with no visible weight: NaN).

    Colours each query row by its own maximum, so a row with many keys (small weights) shows where it
    looks as clearly as row 0 under the causal mask (one key, weight 1). float32 ``[query_pos, key_pos]``.
    """
    w = np.array(weights, dtype=np.float64)
    if visible is not None:
        w = np.where(np.asarray(visible, bool), w, np.nan)
    w[~np.isfinite(w)] = np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        top = np.nanmax(np.where(np.isnan(w), -np.inf, w), axis=-1, keepdims=True)
        out = np.where(top > 0, w / np.where(top > 0, top, 1.0), np.nan)
    return out.astype(np.float32)


def stage_figure(trace: Trace, stage: str, *, batch: int = 0, head: int = 0, layer: int = 0,
                 zrange: tuple[float, float] | None = None, hide_keys: np.ndarray | None = None,
                 show_scale: bool = True, fixed: bool = False, title: str | None = None,
                 height: int | None = None, row_scale: bool = False, cell: tuple[int, int] | None = None,
                 width_px: int = FOCUS_WIDTH_PX, square: bool = False, source: list[str] | None = None,
                 fit: int | None = None, fit_ticks: bool | None = None) -> go.Figure:
    """The heatmap of one stage, one head, one sentence.

    ``scores``/``masked_scores``/``weights``: ``[query_pos, key_pos]``. ``q``/``k``/``v``/``context``:
    ``[pos, d_head]``. ``hide_keys`` (bool ``[key_pos]``) blanks chosen key columns (e.g. special tokens).
    ``zrange`` defaults to :func:`stage_range` over every head (``fixed`` as there); the colour
    bar's title says what the range is. ``row_scale`` (weights only): each query row coloured from 0 to
    its own largest weight (:func:`row_scaled`; the hover keeps the weight). ``cell = (query, key)``:
    that cell is framed (:func:`outline_cell`). ``width_px`` and ``square``: as :func:`heatmap`. ``source``
    (plain lines: the sentence and settings): the caption becomes a title above the plot, and the colour range
    and these lines go under it (:func:`title_and_caption`, the slide layout on screen). ``fit`` (px, with
    ``source``): the whole figure's height, when every row keeps its label (:func:`fit_height`); else ``height`` as
    usual. ``fit_ticks``: label every k-th token where one per token would overlap in ``width_px`` × ``height``
    (:func:`heatmap`'s); by default only with ``source``.

    Raises:
        KeyError: unknown stage.
    """
    data = trace.stage(stage, layer)[batch, head]
    tokens = trace.tokens[batch]
    rows = [label(t, i) for i, t in enumerate(tokens)]
    ticks = [short_label(t, i) for i, t in enumerate(tokens)]
    meta = {"stage": stage, "head": head, "layer": layer, "batch": batch}
    if zrange is None:
        zrange = stage_range(trace, stage, batch, layer, fixed=fixed)
    colorscale = DIVERGING if stage in SIGNED_STAGES else SEQUENTIAL
    caption = _("head {head}").format(head=head) if title is None else title
    row_scale = row_scale and stage in ("weights", "dropped_weights")
    note = _("each query row coloured from 0 to its own largest weight") if row_scale else range_note(stage, zrange, fixed)
    below = f"{caption}<br><span style='font-size:11px'>{note}</span>"  # a caption under the plot, or a header
    fit = fit if source is not None else None
    if fit:  # heatmap() thins its labels for a plot ``height`` - 70 - its key labels tall: the one ``fit`` leaves
        height = fit - caption_height(caption, [note] + list(source), width_px) + 70
    common = dict(zrange=(0.0, 1.0) if row_scale else zrange, colorscale=colorscale, meta=meta, show_scale=show_scale,
                  height=height, title="" if source is not None else below,
                  scale_title=_("÷ row max") if row_scale else _(STAGE_SHORT.get(stage, stage)), row_ticks=ticks,
                  width_px=width_px, square=square,
                  # the app's focused head (``source``): every k-th label where one per token would overlap (SmolLM2
                  # at 23 tokens beside the tiles; across the column, 60 tokens' 10-px labels in ~9-px rows)
                  fit_ticks=source is not None if fit_ticks is None else fit_ticks)
    if stage in PATTERN_STAGES:
        visible = trace.visible(batch).copy()
        hidden = None  # cells the mask lets through but the view blanks (hide_keys): computed as usual
        if hide_keys is not None:
            hidden = visible & np.asarray(hide_keys, bool)[None, :]
            visible &= ~hidden
        # raw scores are shown whole: masking has not happened yet at that stage
        fig = heatmap(row_scaled(data, visible) if row_scale else data, rows, rows,
                      visible=None if stage == "scores" else visible, hidden=None if stage == "scores" else hidden,
                      empty_rows=None if stage == "scores" else trace.empty_rows(batch), col_ticks=ticks,
                      customdata=data if row_scale else None, **common)
        # "cells": a click on a cell can be read from the heatmap itself (ui/shell/chart.py reads it at any size and
        # drops the markers below, which only st.plotly_chart needs)
        fig.layout.meta = {**meta, **({"row_scale": True} if row_scale else {}), "cells": True}
        if len(tokens) <= CELL_MARKERS_MAX:
            add_cell_markers(fig, rows, data if stage == "scores" else np.where(visible, data, np.nan),
                             hidden=None if stage == "scores" else hidden, hidden_values=data)
        else:  # a drag zooms in (the app's caption says so; without it a selectable chart pans, as st.plotly_chart's)
            fig.update_layout(dragmode="zoom")
        if cell is not None and max(cell) < len(tokens):
            outline_cell(fig, *cell)
    else:
        cols = [f"d{j}" for j in range(data.shape[-1])]
        fig = heatmap(data, rows, cols, row_title=_("position"), col_title=_("dimension"), **common)
    if source is not None:
        title_and_caption(fig, caption, [note] + list(source), width_px)
        # rows too small for every label (1.4 × the tick font, as ticks.fitted_positions): the usual height
        if fit and not fit_height(fig, fit, width_px, len(tokens), math.ceil(1.4 * _tick_font(len(tokens)))):
            return stage_figure(trace, stage, batch=batch, head=head, layer=layer, zrange=zrange, hide_keys=hide_keys,
                                show_scale=show_scale, fixed=fixed, title=title, row_scale=row_scale, cell=cell,
                                width_px=width_px, square=square, source=source, fit_ticks=fit_ticks)
    return fig
