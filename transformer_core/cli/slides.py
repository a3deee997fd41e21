"""Slides (built in :mod:`transformer_core.figures.slide`, shared with the app), PNG/SVG through kaleido. No plotly here.

PNG/SVG need Chromium (Debian ``chromium``, found on ``PATH`` or via ``BROWSER_PATH``).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import warnings
from collections.abc import Iterator

from ..figures.slide import (HTML_HEIGHT, HTML_WIDTH, build_figure, head_figures, slide_figure,  # noqa: F401 (export)
                             stage_slide, stage_title)
from ..text.i18n import _
from .args import CHROMIUM_NAMES, SLIDE_HEIGHT, SLIDE_WIDTH, ExportError


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


def render_image(fig, fmt: str, *, width: int = SLIDE_WIDTH, height: int = SLIDE_HEIGHT,
                 scale: float = 1.0) -> bytes:
    """PNG or SVG bytes of a Plotly figure ``fig``, through kaleido and the system Chromium.

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
