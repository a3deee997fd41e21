"""Slides: figures titled with what produced them, every head in one grid, PNG/SVG through kaleido.

PNG/SVG need Chromium (Debian ``chromium``, found on ``PATH`` or via ``BROWSER_PATH``).
"""
from __future__ import annotations

import contextlib
import html
import math
import os
import shutil
import warnings
from collections.abc import Iterator

import plotly.graph_objects as go

from ..figures import stage as figures
from ..records.trace import Trace
from ..text.i18n import _
from .args import CHROMIUM_NAMES, SLIDE_HEIGHT, SLIDE_WIDTH, ExportError
from .traces import describe


def head_figures(trace: Trace, stage: str, *, batch: int = 0, layer: int = 0,
                 heads: list[int] | None = None) -> list[go.Figure]:
    """``figures.stage_figure`` for each head, all with the stage's shared colour range (as in the app)."""
    zrange = figures.stage_range(trace, stage, batch, layer)
    heads = list(range(trace.stage(stage, layer).shape[1])) if heads is None else heads
    return [figures.stage_figure(trace, stage, batch=batch, head=h, layer=layer, zrange=zrange) for h in heads]


def stage_title(stage: str, layer: int, head: int | None) -> str:
    which = _("all heads") if head is None else _("head {head}").format(head=head)
    return _("{stage} — layer {layer}, {which}").format(stage=_(figures.STAGE_TITLES.get(stage, stage)), layer=layer,
                                                        which=which)


def slide_figure(fig: go.Figure, title: str, subtitle: str) -> go.Figure:
    """Give a figure a slide title and a subtitle (plain text; escaped here)."""
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


def grid_shape(n: int, aspect: float) -> tuple[int, int]:
    """(rows, cols) for ``n`` square-ish panels on a canvas ``aspect`` = width / height."""
    cols = max(1, min(n, math.ceil(math.sqrt(n * aspect))))
    rows = math.ceil(n / cols)
    return rows, math.ceil(n / rows)


def head_grid(figs: list[go.Figure], *, aspect: float = SLIDE_WIDTH / SLIDE_HEIGHT) -> go.Figure:
    """Several ``stage_figure`` outputs as one grid (for one image of every head).

    Traces are copied unchanged; keys label the top row, queries the left column, one colour
    bar (the range is shared), and each panel is named under its plot.
    """
    from plotly.subplots import make_subplots

    rows, cols = grid_shape(len(figs), aspect)
    grid = make_subplots(rows=rows, cols=cols, horizontal_spacing=0.02, vertical_spacing=0.06 + 0.02 * (rows > 2))
    first = figs[0].layout
    n_ticks = len(first.yaxis.tickvals or ())
    tick_font = dict(size=11 if n_ticks <= 8 else 9 if n_ticks <= 16 else 7)
    for i, fig in enumerate(figs):
        r, c = divmod(i, cols)
        for j, trace in enumerate(fig.data):
            trace = go.Figure(trace).data[0]  # a copy
            if j == 0:  # the values; later heatmaps are the one-colour "masked" overlays
                trace.update(showscale=(i == 0), colorbar=dict(thickness=14, len=0.9))
            grid.add_trace(trace, row=r + 1, col=c + 1)
        xa, ya = fig.layout.xaxis, fig.layout.yaxis
        grid.update_xaxes(tickmode="array", tickvals=xa.tickvals, ticktext=xa.ticktext if r == 0 else None,
                          showticklabels=(r == 0), side="top", tickangle=xa.tickangle, showgrid=False,
                          zeroline=False, tickfont=tick_font, row=r + 1, col=c + 1)
        grid.update_yaxes(tickmode="array", tickvals=ya.tickvals, ticktext=ya.ticktext if c == 0 else None,
                          showticklabels=(c == 0), autorange="reversed", showgrid=False, zeroline=False,
                          tickfont=tick_font, row=r + 1, col=c + 1)
        xref = grid.get_subplot(r + 1, c + 1).xaxis.plotly_name.replace("axis", "")
        domain_x = grid.layout[f"xaxis{'' if xref == 'x' else xref[1:]}"].domain
        domain_y = grid.get_subplot(r + 1, c + 1).yaxis.domain
        grid.add_annotation(text=fig.layout.title.text or f"panel {i}", showarrow=False, xref="paper", yref="paper",
                            x=(domain_x[0] + domain_x[1]) / 2, y=domain_y[0], yanchor="top", font=dict(size=12))
    grid.update_layout(plot_bgcolor=first.plot_bgcolor, meta={**dict(first.meta or {}), "head": None},
                       showlegend=False)
    return grid


def build_figure(trace: Trace, stage: str, *, batch: int, layer: int, head: int | None) -> go.Figure:
    """The slide figure: one head, or a grid of every head, titled with what produced it."""
    if head is None:
        fig = head_grid(head_figures(trace, stage, batch=batch, layer=layer))
    else:
        fig = head_figures(trace, stage, batch=batch, layer=layer, heads=[head])[0]
    return slide_figure(fig, stage_title(stage, layer, head), describe(trace, batch))


def find_chromium() -> str | None:
    """The Chromium kaleido will use: ``BROWSER_PATH`` if set, else the first one on ``PATH``."""
    env = os.environ.get("BROWSER_PATH")
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    for name in CHROMIUM_NAMES:
        if found := shutil.which(name):
            return found
    try:  # choreographer also knows typical install folders and its own downloaded copy
        from choreographer.browsers.chromium import Chromium

        return Chromium.find_browser(skip_local=False)
    except Exception:  # noqa: BLE001 best effort: any failure means "not found"
        return None


def no_chromium_message(fmt: str) -> str:
    where = os.environ.get("BROWSER_PATH")
    found = f"BROWSER_PATH={where!r} is not an executable" if where else "no chromium on PATH"
    return (f"{fmt.upper()} export needs Chromium and {found}: install it (apt install chromium) or set "
            "BROWSER_PATH=/path/to/chromium; --format html, csv and json work without it")


def render_image(fig: go.Figure, fmt: str, *, width: int = SLIDE_WIDTH, height: int = SLIDE_HEIGHT,
                 scale: float = 1.0) -> bytes:
    """PNG or SVG bytes through kaleido and the system Chromium.

    Raises:
        ExportError: no Chromium, or kaleido failed (message has the cause).
    """
    if find_chromium() is None:
        raise ExportError(no_chromium_message(fmt))
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The kopts argument is ignored")  # with image_server()
            return fig.to_image(format=fmt, width=width, height=height, scale=scale)
    except Exception as err:  # noqa: BLE001 kaleido/choreographer raise many types; report one line
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ExportError(f"{fmt.upper()} export failed in kaleido/Chromium: {detail}") from None


@contextlib.contextmanager
def image_server() -> Iterator[None]:
    """Keep one Chromium running for every image rendered in the block (first image ~3 s, then ~0.3 s each)."""
    import kaleido

    kaleido.start_sync_server(silence_warnings=True)
    try:
        yield
    finally:
        kaleido.stop_sync_server(silence_warnings=True)
