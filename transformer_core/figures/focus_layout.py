"""The focused heatmap's layout on screen (the slide layout): its title above the key labels, the colour range, the
sentence and the settings under the plot, and a height that fits a first screen. Used by
:func:`transformer_core.figures.stage.stage_figure` (``source``, ``fit``)."""
from __future__ import annotations

import html

import plotly.graph_objects as go

from .text_size import wrap

FOCUS_WIDTH_PX = 520  # the width a focused heatmap is drawn at on a 1280-px screen (for tick angle and gaps)
COLOUR_BAR_PX = 58  # the colour bar with its tick labels, right of a heatmap's plot


def title_and_caption(fig: go.Figure, caption: str, lines: list[str], width_px: int = FOCUS_WIDTH_PX) -> go.Figure:
    """The slide layout on screen: ``caption`` (plain text) as the figure's title above its key labels (14 px), and
    ``lines`` (plain text: the colour range, the sentence and settings; 11 px) under the plot, wrapped to the figure.
    The title costs the plot one line of height above the fold at 1280×720; the figure grows by what is added, so the
    plot keeps its size. The chart camera saves it as drawn (:func:`~transformer_core.figures.files.chart_config`)."""
    top, below = _caption_lines(caption, lines, width_px)
    top_px, below_px = _caption_px(top, below)
    fig.add_annotation(text="<br>".join(top), xref="paper", yref="paper", x=0.5, y=1, xanchor="center",
                       yanchor="bottom", yshift=(fig.layout.margin.t or 0) - 2, showarrow=False, font=dict(size=14),
                       name="title")
    fig.update_layout(  # as heatmap()'s caption, under the plot, in a bottom margin made for it
        title=dict(text="<br>".join(f"<span style='font-weight:normal'>{p}</span>" for p in below),
                   font=dict(size=11, color="#444"), x=0, xanchor="left", yref="paper", y=0, yanchor="top",
                   automargin=False, pad=dict(t=16)),  # its box reaches ~10 px above its pad: clear of the last row
        margin=dict(t=(fig.layout.margin.t or 0) + top_px, b=below_px),
        # 50: the bottom margin the old caption took; 8 px less plot keeps the default text's cells above the fold
        height=(fig.layout.height or 430) + top_px + below_px - 58)
    return fig


def _caption_lines(caption: str, lines: list[str], width_px: int) -> tuple[list[str], list[str]]:
    width = min(width_px, 476)  # the focused column at 1280 px
    return ([html.escape(p) for p in wrap(html.unescape(caption), 14, width - 110, em=0.56)],
            [html.escape(p) for line in lines if line for p in wrap(line, 11, width - 20, em=0.52)])


def _caption_px(top: list[str], below: list[str]) -> tuple[int, int]:
    return int(14 * 1.3 * len(top) + 6), int(11 * 1.3 * len(below) + 24)


def caption_height(caption: str, lines: list[str], width_px: int = FOCUS_WIDTH_PX) -> int:
    """Height (px) :func:`title_and_caption` adds to a figure's for this caption and these lines, above the plot and
    under it together (the figure is then ``height`` + this − 58)."""
    return sum(_caption_px(*_caption_lines(caption, lines, width_px)))


def fit_height(fig: go.Figure, height: int, width_px: int, n_rows: int, min_row_px: int = 17,
               flattest: float = 0.8) -> bool:
    """Give ``fig`` (a :func:`~transformer_core.figures.stage.heatmap` with its captions) the whole ``height`` (px)
    when its plot keeps rows of at least ``min_row_px`` in what the labels and captions leave; a square one's cells
    may then be up to ``1 / flattest`` as wide as tall (``scaleratio``), so a short sentence's plot keeps its width on
    a 720-px screen. False (``fig`` unchanged) when the rows would be smaller."""
    m = fig.layout.margin
    plot_h = height - (m.t or 0) - (m.b or 0)
    if plot_h < min_row_px * n_rows:
        return False
    plot_w = min(width_px, 476) - (m.l or 0) - (m.r or 0) - COLOUR_BAR_PX
    fig.layout.height = height
    if fig.layout.yaxis.scaleanchor:
        fig.layout.yaxis.scaleratio = min(1.0, max(flattest, plot_h / max(plot_w, 1)))
    return True
