"""Slides (the layout is :mod:`transformer_core.figures.slide`, shared with the app), PNG/SVG through kaleido.

PNG/SVG need Chromium (Debian ``chromium``, found on ``PATH`` or via ``BROWSER_PATH``).
"""
from __future__ import annotations

import contextlib
import html
import os
import shutil
import warnings
from collections.abc import Iterator

import plotly.graph_objects as go

from ..figures import stage as figures
from ..figures.slide import HTML_HEIGHT, HTML_WIDTH, stage_slide, stage_title  # noqa: F401 (stage_title: export)
from ..records.trace import Trace
from ..text.i18n import _
from .args import CHROMIUM_NAMES, SLIDE_HEIGHT, SLIDE_WIDTH, ExportError


def head_figures(trace: Trace, stage: str, *, batch: int = 0, layer: int = 0,
                 heads: list[int] | None = None) -> list[go.Figure]:
    """One slide per head (the offline HTML), all with the stage's shared colour range (as in the app)."""
    zrange = figures.stage_range(trace, stage, batch, layer)
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
    """The slide (:func:`transformer_core.figures.slide.stage_slide`): one head, or a grid of every head,
    titled with what produced it, laid out for a ``width × height`` image."""
    return stage_slide(trace, stage, batch=batch, layer=layer, head=head, width=width, height=height)


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
    found = _("BROWSER_PATH={where!r} is not an executable").format(where=where) if where else \
        _("no chromium on PATH")
    return _("{fmt} export needs Chromium and {found}: install it (apt install chromium) or set "
             "BROWSER_PATH=/path/to/chromium; --format html, csv and json work without it").format(
        fmt=fmt.upper(), found=found)


def render_image(fig: go.Figure, fmt: str, *, width: int = SLIDE_WIDTH, height: int = SLIDE_HEIGHT,
                 scale: float = 1.0) -> bytes:
    """PNG or SVG bytes through kaleido and the system Chromium.

    Raises:
        ExportError: no Chromium, or kaleido failed twice (the message has the second cause).
    """
    if find_chromium() is None:
        raise ExportError(no_chromium_message(fmt))
    for attempt in (1, 2):  # a fresh Chromium page sometimes fails once ("kaleido_scopes is not defined")
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="The kopts argument is ignored")  # with image_server()
                return fig.to_image(format=fmt, width=width, height=height, scale=scale)
        except Exception as err:  # noqa: BLE001 kaleido/choreographer raise many types; report one line
            if attempt == 1:
                continue
            detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    raise ExportError(_("{fmt} export failed in kaleido/Chromium: {detail}").format(fmt=fmt.upper(), detail=detail))


@contextlib.contextmanager
def image_server() -> Iterator[None]:
    """Keep one Chromium running for every image rendered in the block (first image ~3 s, then ~0.3 s each)."""
    import kaleido

    kaleido.start_sync_server(silence_warnings=True)
    try:
        yield
    finally:
        kaleido.stop_sync_server(silence_warnings=True)
