"""One slide layout for every export: the command line's PNG/SVG/HTML and the app's offline HTML.

A slide is a fixed canvas (1280×720 by default) laid out in pixels, top to bottom:

* the **title** (what stage, layer and head: :func:`stage_title`);
* the **sentence and settings** line(s) (:func:`describe`) and the colour range
  (:func:`~transformer_core.figures.stage.range_note`), wrapped to the canvas;
* the **panels**: one head, or every head in a grid, each panel's cells **square**; a panel's caption
  (``head 3``) sits **above** its own panel (above its key labels in the top row), so it never reads as the
  next panel's heading and never runs into a neighbour's; one colour bar beside the panels (the range is shared).

The geometry is computed here from estimated text widths (:func:`text_px`, generous) instead of left to
Plotly's automargins, so every box is known; ``layout.meta["slide"]`` records it.
``tests/test_slide_layout.py`` renders each export path in Chromium and measures the drawn text boxes.
The app's focused heatmap carries the same parts on screen (``stage_figure(source=...)``: its title above the
plot, the colour range, sentence and settings under it, square cells), so the chart camera saves them
(:func:`~transformer_core.figures.stage.chart_config`).
"""
from __future__ import annotations

import html
import math

import plotly.graph_objects as go

from ..models.face import describe_settings
from ..records.serialize import figures_to_html
from ..records.trace import Trace
from ..text.i18n import _
from .stage import FONT, STAGE_TITLES, chart_config, figure_filename, range_note, stage_figure, stage_range
from .text_size import text_px, wrap

SLIDE_WIDTH, SLIDE_HEIGHT = 1280, 720
HTML_WIDTH, HTML_HEIGHT = 1152, 648  # the offline HTML pages: a 16:9 slide that fits a 1280-px window
TITLE_PX, TEXT_PX, TICK_PX, CAPTION_PX = 20, 13, 11, 13  # font sizes
LINE = 1.3  # Plotly's line height, in font sizes
PAD = 16  # canvas edge
GAP_X, GAP_Y = 14, 10  # between panels
COLOURBAR_PX = 86  # gap, bar and its tick labels
# The smallest cell drawn: the largest legal grid at the default size, 64 heads of 512 tokens at 1280×720, gets
# 0.13 px (each panel ~70 px). On a canvas smaller than its header and labels the grid's free room is negative,
# where the layout used to divide by zero: there the slide is refused, naming a size that works
MIN_CELL_PX = 0.1
MAX_SIDE = 4096  # the largest canvas side the command line accepts (--width, --height)


def describe(trace: Trace, batch: int, words_max: int = 90) -> str:
    """Plain-text one-liner of what produced the figure: model, mask, sentence (cut to ``words_max`` characters)."""
    s = trace.settings
    model = describe_settings(s)
    if s.get("ablate"):
        model += _(", {heads} ablated ({mode})").format(heads=s["ablate"], mode=s.get("ablate_mode", "zero"))
    names = {"causal": _("causal"), "padding": _("padding")}
    masks = [names[m] for m in names if s.get(m)]
    if isinstance(s.get("window"), int):  # the toy's sliding window with sinks
        masks.append(_("sliding window (w = {w}, s = {s})").format(w=s["window"], s=s.get("sinks", 0)))
    mask = _("{names} mask").format(names=" + ".join(masks)) if masks else _("no mask")
    words = " ".join(trace.tokens[batch][: trace.lengths[batch]])
    if len(words) > words_max:
        words = words[:words_max - 1] + "…"
    return _("{model} · {mask} · sentence {b}: “{words}”").format(model=model, mask=mask, b=batch, words=words)


def stage_title(stage: str, layer: int, head: int | None) -> str:
    """``"Masked scores — layer 0, all heads"`` (``head=None``) or ``"… — layer 5, head 3"``."""
    which = _("all heads") if head is None else _("head {head}").format(head=head)
    return _("{stage} — layer {layer}, {which}").format(stage=_(STAGE_TITLES.get(stage, stage)), layer=layer,
                                                        which=which)


def _header_lines(lines: list[str], width: int) -> tuple[list[str], float]:
    """The wrapped ``lines`` (escaped) and the header's height in px on a ``width``-px canvas."""
    below = 12 + TITLE_PX * LINE + 4
    shown = [html.escape(part) for line in lines if line for part in wrap(line, TEXT_PX, max(1, width - 2 * PAD))]
    return shown, below + len(shown) * TEXT_PX * LINE + 10


def header(fig: go.Figure, title: str, lines: list[str], width: int, height: int) -> float:
    """Put the slide title and the wrapped ``lines`` (plain text) at the top of a ``width × height`` canvas
    whose paper is the whole canvas; return the header's height in pixels."""
    top = 12
    fig.update_layout(title=dict(text=html.escape(title), font=dict(size=TITLE_PX), x=PAD / width, xanchor="left",
                                 xref="container", y=1 - top / height, yanchor="top", yref="container",
                                 automargin=False, pad=dict(t=0, b=0, l=0, r=0)))
    below = top + TITLE_PX * LINE + 4
    shown, height_px = _header_lines(lines, width)
    if shown:
        fig.add_annotation(text="<br>".join(shown), xref="paper", yref="paper", x=PAD / width, y=1 - below / height,
                           xanchor="left", yanchor="top", align="left", showarrow=False,
                           font=dict(size=TEXT_PX, color="#444"), name="slide lines")
    return height_px


def _ticks(labels: list, texts: list, cell: float, size: int) -> tuple[list, list]:
    """Every k-th tick so neighbours are at least 1.3 font sizes apart on a ``cell``-px axis."""
    k = max(1, math.ceil(size * LINE / max(cell, 1e-6)))
    return labels[::k], texts[::k]


def _grid(n: int, rows: int, cols: int, room: dict, width: int, height: int) -> tuple[float, int, int]:
    """``(cell px, grid rows, grid columns)`` giving the largest square cells for ``n`` panels of ``rows × cols``."""
    best = (0.0, 1, n)
    for across in range(1, n + 1):
        down = math.ceil(n / across)
        free_w = width - 2 * PAD - room["left"] - COLOURBAR_PX - (across - 1) * GAP_X
        free_h = (height - room["header"] - room["top"] - PAD - down * room["caption"] - (down - 1) * GAP_Y)
        cell = min(free_w / (across * cols), free_h / (down * rows))
        if cell > best[0] + 1e-9:
            best = (cell, down, across)
    return best


class SlideTooSmall(ValueError):
    """The canvas leaves no room for the panels; ``need`` is the smallest ``(width, height)`` in px, at least the
    asked one on each side, where they fit (None: not within :data:`MAX_SIDE`). A ``ValueError``, so the command
    line refuses in one line with exit 2."""

    def __init__(self, width: int, height: int, need: tuple[int, int] | None) -> None:
        self.size, self.need = (width, height), need
        if need is None:
            message = _("a {width}×{height} px slide has no room for these panels, even at {max}×{max} px").format(
                width=width, height=height, max=MAX_SIDE)
        else:
            message = _("a {width}×{height} px slide has no room for these panels: the smallest size that works "
                        "here is {need_w}×{need_h} px (--width {need_w} --height {need_h})").format(
                width=width, height=height, need_w=need[0], need_h=need[1])
        super().__init__(message)


def _smallest(fits, low: int) -> int | None:
    """The smallest whole ``x`` in ``low`` … :data:`MAX_SIDE` with ``fits(x)`` (``fits`` grows with ``x``)."""
    if not fits(MAX_SIDE):
        return None
    high = MAX_SIDE
    while low < high:
        mid = (low + high) // 2
        if fits(mid):
            high = mid
        else:
            low = mid + 1
    return high


def _smallest_fit(fits, width: int, height: int) -> tuple[int, int] | None:
    """The smallest canvas (by area) that ``fits(w, h)``, never narrower or lower than asked: the asked width with
    a taller canvas, the asked height with a wider one, or a square-ish growth of both."""
    options = []
    if (h := _smallest(lambda x: fits(width, x), height)) is not None:
        options.append((width, h))
    if (w := _smallest(lambda x: fits(x, height), width)) is not None:
        options.append((w, height))
    if (k := _smallest(lambda x: fits(max(width, x), max(height, x)), min(width, height))) is not None:
        options.append((max(width, k), max(height, k)))
    return min(options, key=lambda size: (size[0] * size[1], size)) if options else None


def panels_slide(figs: list[go.Figure], captions: list[str] | None, title: str, lines: list[str], *,
                 width: int = SLIDE_WIDTH, height: int = SLIDE_HEIGHT) -> go.Figure:
    """Several heatmaps of one shape (``stage_figure`` outputs, one shared colour range) as one slide.

    ``captions``: one per panel, drawn above it (None: no captions, e.g. one head named by the title).
    Keys label the top row of panels (turned vertical when a label is wider than its cells), queries the left
    column; every k-th label when cells are smaller than the text. Cells are square (``scaleanchor`` too).
    ``layout.meta["slide"]``: ``{"cell": px, "grid": [rows, cols], "panels": [[left, top, right, bottom] px]}``.

    Raises:
        SlideTooSmall: the header and labels leave the panels no room (cells under :data:`MIN_CELL_PX`, or
            panels narrower than their captions); the message names the smallest size that works.
    """
    first = figs[0]
    values = first.data[0]
    n_rows, n_cols = len(values.y), len(values.x)
    xa, ya = first.layout.xaxis, first.layout.yaxis
    x_vals, x_text = list(xa.tickvals or []), list(xa.ticktext or [])
    y_vals, y_text = list(ya.tickvals or []), list(ya.ticktext or [])
    x_title, y_title = xa.title.text or "", ya.title.text or ""
    title_px = TICK_PX * LINE + 4  # an axis title's line
    left = max((text_px(t, TICK_PX) for t in y_text), default=0) + 8 + title_px + TICK_PX
    widest_x = max((text_px(t, TICK_PX) for t in x_text), default=0)
    cap = CAPTION_PX * LINE + 4 if captions else 0

    def layout(w: int, h: int) -> tuple[float, int, int, dict]:
        """``(cell px, grid rows, grid columns, room)`` on a ``w × h`` canvas."""
        room = dict(header=_header_lines(lines, w)[1], left=left, caption=cap,
                    top=widest_x + 8 + title_px)  # vertical key labels
        cell, down, across = _grid(len(figs), n_rows, n_cols, room, w, h)
        if cell > 0 and widest_x + 4 <= cell * max(1, math.ceil(TICK_PX * LINE / cell)):
            room["top"] = TICK_PX * LINE + 6 + title_px  # horizontal key labels fit their columns: less room above
            cell, down, across = _grid(len(figs), n_rows, n_cols, room, w, h)
        return cell, down, across, room

    widest_caption = max((text_px(c, CAPTION_PX) for c in captions or []), default=0)

    def fits(w: int, h: int) -> bool:  # cells to draw, and captions that do not run into their neighbours'
        cell = layout(w, h)[0]
        return cell >= MIN_CELL_PX and cell * n_cols + GAP_X >= widest_caption

    cell, down, across, room = layout(width, height)
    if not fits(width, height):
        raise SlideTooSmall(width, height, _smallest_fit(fits, width, height))
    fig = go.Figure()
    head_px = header(fig, title, lines, width, height)
    angle = 0 if widest_x + 4 <= cell * max(1, math.ceil(TICK_PX * LINE / cell)) else -90
    pw, ph = cell * n_cols, cell * n_rows
    block_w = room["left"] + across * pw + (across - 1) * GAP_X
    x0 = PAD + room["left"] + max(0.0, (width - 2 * PAD - COLOURBAR_PX - block_w) / 2)
    y0 = head_px + cap + room["top"]  # the top row: its captions, the key title and labels, then the cells
    # small cells: the first key label (vertical) would reach left of the panel, into the first query label
    standoff = max(0, math.ceil(TICK_PX * LINE / 2 - cell / 2) + 2)
    tx, tt = _ticks(x_vals, x_text, cell, TICK_PX)
    ty, yt = _ticks(y_vals, y_text, cell, TICK_PX)
    boxes, axes = [], {}
    for i, panel in enumerate(figs):
        r, c = divmod(i, across)
        left_px = x0 + c * (pw + GAP_X)
        top_px = y0 + r * (ph + cap + GAP_Y)
        boxes.append([left_px, top_px, left_px + pw, top_px + ph])
        name = "" if i == 0 else str(i + 1)
        axes[f"xaxis{name}"] = dict(
            domain=[left_px / width, (left_px + pw) / width], anchor=f"y{name}", type="category", side="top",
            tickmode="array", tickvals=tx, ticktext=tt, showticklabels=r == 0, tickangle=angle,
            tickfont=dict(size=TICK_PX), showgrid=False, zeroline=False, automargin=False, ticklabeloverflow="allow",
            title=dict(text=x_title if r == 0 else "", standoff=4, font=dict(size=TICK_PX)), constrain="domain")
        axes[f"yaxis{name}"] = dict(
            domain=[1 - (top_px + ph) / height, 1 - top_px / height], anchor=f"x{name}", type="category",
            tickmode="array", tickvals=ty, ticktext=yt, showticklabels=c == 0, autorange="reversed",
            ticklabelstandoff=standoff,
            tickfont=dict(size=TICK_PX), showgrid=False, zeroline=False, automargin=False, ticklabeloverflow="allow",
            title=dict(text=y_title if c == 0 else "", standoff=4, font=dict(size=TICK_PX)),
            scaleanchor=f"x{name}", scaleratio=1, constrain="domain")
        for j, trace in enumerate(panel.data):
            if trace.type != "heatmap":  # the click markers of the app
                continue
            copy = go.Heatmap(trace)
            copy.update(xaxis=f"x{name}", yaxis=f"y{name}", showscale=(i == 0 and j == 0))
            if i == 0 and j == 0:
                copy.update(colorbar=dict(
                    x=(x0 + block_w - room["left"] + 16) / width, xanchor="left", xref="paper", thickness=14,
                    y=1 - (y0 + (down * ph + (down - 1) * (cap + GAP_Y)) / 2) / height, yanchor="middle",
                    len=min(ph * down + (down - 1) * (cap + GAP_Y), height - y0 - PAD) / height, lenmode="fraction",
                    tickfont=dict(size=TICK_PX), title=dict(text=trace.colorbar.title.text or "",
                                                             font=dict(size=TICK_PX), side="top")))
            fig.add_trace(copy)
        if captions:
            above = top_px - (room["top"] if r == 0 else 0) - 2
            fig.add_annotation(text=html.escape(captions[i]), xref="paper", yref="paper",
                               x=(left_px + pw / 2) / width, y=1 - above / height, xanchor="center",
                               yanchor="bottom", showarrow=False, font=dict(size=CAPTION_PX), name="caption")
    meta = {**dict(first.layout.meta or {}), "slide": {"cell": cell, "grid": [down, across], "panels": boxes}}
    if len(figs) > 1:
        meta["head"] = None
    fig.update_layout(width=width, height=height, autosize=False, margin=dict(l=0, r=0, t=0, b=0),
                      plot_bgcolor=first.layout.plot_bgcolor or "#ffffff", paper_bgcolor="#ffffff",
                      showlegend=False, meta=meta, font=dict(family=FONT), **axes)
    return fig


def stage_slide(trace: Trace, stage: str, *, batch: int = 0, layer: int = 0, head: int | None = None,
                width: int = SLIDE_WIDTH, height: int = SLIDE_HEIGHT, zrange: tuple[float, float] | None = None,
                fixed: bool = False) -> go.Figure:
    """One head (``head``) or every head (``None``) of one stage as a slide: title, sentence and settings,
    colour range, square cells, per-head captions above their panels (grid only).

    Raises:
        KeyError: unknown stage or layer. IndexError: head out of range.
    """
    if zrange is None:
        zrange = stage_range(trace, stage, batch, layer, fixed=fixed)
    n_heads = trace.stage(stage, layer).shape[1]
    heads = list(range(n_heads)) if head is None else [head]
    if head is not None and not 0 <= head < n_heads:
        raise IndexError(f"head {head} out of range 0..{n_heads - 1}")
    figs = [stage_figure(trace, stage, batch=batch, head=h, layer=layer, zrange=zrange, fixed=fixed) for h in heads]
    captions = [_("head {head}").format(head=h) for h in heads] if head is None else None
    lines = [describe(trace, batch), range_note(stage, zrange, fixed)]
    return panels_slide(figs, captions, stage_title(stage, layer, head), lines, width=width, height=height)


def trace_html(trace: Trace, stages: tuple[str, ...], *, batch: int = 0, layer: int = 0,
               title: str = "Attention Explorer") -> str:
    """Every head of each of ``stages`` as one offline HTML page of slides (the app's download): each slide is
    titled with its stage, layer and head above its figure, under the page's sentence-and-settings line."""
    figs = []
    for stage in stages:
        zrange = stage_range(trace, stage, batch, layer)
        figs += [stage_slide(trace, stage, batch=batch, layer=layer, head=h, zrange=zrange, width=HTML_WIDTH,
                             height=HTML_HEIGHT) for h in range(trace.stage(stage, layer).shape[1])]
    stem = figure_filename("trace", None, layer, trace.tokens[batch])
    return figures_to_html(figs, title, description=describe(trace, batch), config=chart_config(stem))


# ---------------------------------------------------------------- the command line's slides (transformer_core.cli)


def head_figures(trace: Trace, stage: str, *, batch: int = 0, layer: int = 0,
                 heads: list[int] | None = None) -> list[go.Figure]:
    """One slide per head (the offline HTML), all with the stage's shared colour range (as in the app)."""
    zrange = stage_range(trace, stage, batch, layer)
    heads = list(range(trace.stage(stage, layer).shape[1])) if heads is None else heads
    return [stage_slide(trace, stage, batch=batch, layer=layer, head=h, zrange=zrange, width=HTML_WIDTH,
                        height=HTML_HEIGHT) for h in heads]


def slide_figure(fig: go.Figure, title: str, subtitle: str) -> go.Figure:
    """Give a figure laid out by Plotly (rollout/flow) a slide title and a subtitle (plain text; escaped here)."""
    if fig.layout.height:  # on screen (HTML) keep the plot area the builder chose; files get --width/--height
        fig.update_layout(height=fig.layout.height + 90)
    fig.update_layout(
        # yref="container": the app's figures put their caption under the plot (yref="paper", y=0)
        title=dict(text=html.escape(title), font=dict(size=18), x=0.01, xanchor="left", y=0.98, yanchor="top",
                   yref="container", automargin=False, pad=dict(t=0, b=0),
                   subtitle=dict(text=html.escape(subtitle), font=dict(size=12, color="#555"))),
        margin=dict(t=130, l=10, r=10, b=20),
    )
    # The template's white zero lines cut through row 0 / column 0 of a heatmap (showgrid=False keeps them).
    fig.update_xaxes(zeroline=False)
    fig.update_yaxes(zeroline=False)
    return fig


def build_figure(trace: Trace, stage: str, *, batch: int, layer: int, head: int | None,
                 width: int = SLIDE_WIDTH, height: int = SLIDE_HEIGHT) -> go.Figure:
    """The slide (:func:`stage_slide`): one head, or a grid of every head,
    titled with what produced it, laid out for a ``width × height`` image."""
    return stage_slide(trace, stage, batch=batch, layer=layer, head=head, width=width, height=height)
