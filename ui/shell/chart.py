"""Our one Plotly element (st.components.v2): the figure's JSON drawn by plotly.js's cartesian bundle."""
# chart(fig, key=, config=, on_select=, selection_mode=, target=) takes what our pages gave st.plotly_chart. The
# bundle (static/plotly/, fetched at install by scripts/fetch_plotly.py with its pinned SHA-256 and MIT licence) is
# served by the app at /app/static/ and loaded once per page, with its zh-CN locale when the page is in Chinese. A click reaches st.session_state[key] in
# Streamlit's own selection shape (selection_event), so the pages' on_select callbacks read it as before.
# st.plotly_chart stays the fallback (fallback_reason), with a note once a session.
from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import streamlit as st

from . import i18n
from .i18n import _

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "static" / "plotly"  # served at ./app/static/plotly/ (server.enableStaticServing)
BUNDLE = "plotly-cartesian-4.1.1.min.js"
LOCALE = "plotly-locale-zh-cn-4.1.1.js"
ENV = "ATTENTION_CHART"  # "streamlit": st.plotly_chart everywhere (the fallback, by hand)
NAME = "attention_chart"
# full screen (chart.js's Fullscreen button): the chart covers the window 32 px in, on the page's background
CSS = (".attention-chart{width:100%}.attention-chart.attention-chart-full{position:fixed;top:32px;left:32px;"
       "right:32px;width:auto;z-index:1000100;background:#fff;box-shadow:0 0 0 100vmax #fff}"
       # the camera's notices ("Preparing image…", "Image download succeeded"): plotly.js stacks them at the top
       # right, over the pickers there; one line each, side by side in the header strip, they cover no control
       ".plotly-notifier{top:8px!important;right:auto!important;left:50%!important;transform:translateX(-50%);"
       "display:flex;gap:4px;max-width:none!important;pointer-events:none;z-index:1000200!important}"
       ".plotly-notifier .notifier-note{max-width:none!important;min-width:0!important;white-space:nowrap;"
       "padding:3px 10px!important}.plotly-notifier .notifier-close{display:none}")
SUFFIX = "-chart"  # the element's own key beside the page's key (which holds the selection event)
# Streamlit's light chart theme as st.plotly_chart draws it: figures made in the app carry the "streamlit"
# template with placeholder colours (#000001…) that only Streamlit's frontend fills in; this is that filled template.
THEME = json.loads((Path(__file__).with_name("chart_theme.json")).read_text(encoding="utf-8"))
SNAKE = {"curveNumber": "curve_number", "pointNumber": "point_number", "pointIndex": "point_index",
         "pointIndices": "point_indices"}
_log = logging.getLogger(__name__)


def fallback_reason() -> str | None:
    """Why this process draws with ``st.plotly_chart`` instead of our element, or None."""
    if os.environ.get(ENV, "").strip().lower() == "streamlit":
        return f"{ENV}=streamlit"
    if not (STATIC / BUNDLE).is_file():
        return f"{STATIC / BUNDLE} is missing"
    try:
        serving = st.get_option("server.enableStaticServing")
    except Exception:  # noqa: BLE001 (an unknown option in another Streamlit)
        serving = False
    return None if serving else "server.enableStaticServing is off"


def selection_event(points: object) -> dict:
    """plotly.js's event points (as the element sends them, camelCase) → Streamlit's plotly selection event:
    ``{"selection": {"points": [{"x", "y", "curve_number", "point_index", "customdata", ...}], "point_indices",
    "box", "lasso"}}``. Anything that is not a list of dicts gives an empty selection."""
    kept, indices = [], []
    for point in points if isinstance(points, list) else []:
        if not isinstance(point, Mapping):
            continue
        out = {SNAKE.get(k, k): v for k, v in point.items()}
        kept.append(out)
        index = out.get("point_index")
        if isinstance(index, int) and index not in indices:
            indices.append(index)
        for index in out.get("point_indices") or []:
            if isinstance(index, int) and index not in indices:
                indices.append(index)
    return {"selection": {"points": kept, "point_indices": indices, "box": [], "lasso": []}}


def themed(spec: dict) -> dict:
    """``spec`` (a figure's JSON) with Streamlit's placeholder template replaced by :data:`THEME`; other templates
    (and figures without one) are kept as they are."""
    layout = spec.get("layout") or {}
    template = layout.get("template")
    if isinstance(template, Mapping) and "#000001" in json.dumps(template.get("layout", {}).get("colorway", [])):
        spec = {**spec, "layout": {**layout, "template": THEME}}
    return spec


def unthemed(fig: Any) -> Any:
    """``fig`` as ``st.plotly_chart`` takes it: a :class:`Spec` (themed JSON) gets Streamlit's template name back, since
    plotly.py refuses :data:`THEME`'s filled-in values ("transparent"); anything else is returned as it is."""
    if isinstance(fig, Spec) and (fig.get("layout") or {}).get("template") == THEME:
        return {**fig, "layout": {**fig["layout"], "template": "streamlit"}}
    return fig


def figure_json(fig: Any) -> dict:
    """A ``go.Figure`` or a figure dict → JSON-ready dict (numpy arrays as plotly.py's typed arrays)."""
    return json.loads(_to_json(fig))


class Spec(dict):
    """A figure as :func:`chart` sends it (JSON-ready, themed): build one with :func:`spec` inside a cached function, so
    a rerun that shows the same figure skips building it (plotly.py's objects) and turning it into JSON (~30 ms for a
    64 kB figure here). ``nbytes``: the length of its JSON text (for byte-bounded caches)."""
    nbytes: int = 0


def spec(fig: Any) -> Spec:
    """``fig`` (a ``go.Figure`` or a figure dict) as the JSON :func:`chart` sends."""
    text = _to_json(fig)
    out = Spec(themed(json.loads(text)))
    out.nbytes = len(text)
    return out


def cell_clicks(figure: Mapping, select: bool) -> tuple[Mapping, bool]:
    """A query × key pattern (``layout.meta.cells``, :func:`transformer_core.figures.stage.stage_figure`) as our element
    draws it: without the transparent marker on every cell (``name="cells"``, ``customdata=[query, key]``), which only
    ``st.plotly_chart`` needs to report a click (streamlit #8760). Our element reads a click on the heatmap itself
    and reports it like a marker's (chart.js), so a cell is clickable at any size, and 32 tokens' 1,024 markers are not
    drawn (about 40 ms of a causal page's click here); the first and the last stay, so the axes' ranges are unchanged.
    With ``select`` the hover says "click to explain".

    Returns ``(figure, True)`` for such a pattern, else ``(figure, False)`` unchanged."""
    meta = (figure.get("layout") or {}).get("meta")
    if not (isinstance(meta, Mapping) and meta.get("cells")):
        return figure, False
    hint = "<br><b>" + _("click to explain") + "</b><extra>"
    traces = []
    for trace in figure.get("data") or []:
        if trace.get("type") == "scatter" and trace.get("name") == "cells":
            # two of them stay, at the first and the last cell, unhoverable: Plotly pads an axis's autorange for its
            # extreme markers, so the heatmap is laid out exactly as with all of them (its size, the fold at 720 px)
            x, y = list(trace.get("x") or []), list(trace.get("y") or [])
            if x and y:
                traces.append({key: trace[key] for key in ("type", "mode", "marker", "showlegend") if key in trace}
                              | {"x": [x[0], x[-1]], "y": [y[0], y[-1]], "hoverinfo": "skip", "name": "cells range"})
            continue
        template = trace.get("hovertemplate")
        if select and trace.get("type") == "heatmap" and isinstance(template, str) and hint not in template:
            trace = {**trace, "hovertemplate": template.replace("<extra>", hint, 1)}
        traces.append(trace)
    return {**figure, "data": traces}, True


def _to_json(fig: Any) -> str:
    if isinstance(fig, Mapping):
        import plotly.io as pio
        return pio.to_json(dict(fig), validate=False)
    return fig.to_json()


@functools.cache
def _element() -> Callable[..., Any]:
    js = Path(__file__).with_name("chart.js").read_text(encoding="utf-8")
    return st.components.v2.component(NAME, html='<div class="attention-chart"></div>',
                                      css=CSS, js=js, isolate_styles=False)


def _store(key: str, on_select: Callable[[], Any] | None) -> None:
    """The element's callback: its raw points → ``st.session_state[key]``, then the page's ``on_select``."""
    raw = st.session_state.get(key + SUFFIX)
    st.session_state[key] = selection_event(raw.get("select") if isinstance(raw, Mapping) else None)
    if on_select is not None:
        on_select()


def _note_fallback(reason: str) -> None:
    if not st.session_state.get("_chart_fallback_noted"):
        st.session_state["_chart_fallback_noted"] = True
        _log.warning("charts drawn by st.plotly_chart: %s", reason)
        st.caption(_("Charts are drawn by Streamlit's own Plotly element ({why}).").format(why=reason))


IMAGE_FORMATS = ("png", "svg")  # what the sidebar's "Chart camera button saves" offers


def image_format() -> str:
    """The session's choice for the chart camera (the sidebar's ``shared_image_format``): ``"png"`` or ``"svg"``."""
    fmt = st.session_state.get("shared_image_format", "png")
    return fmt if fmt in IMAGE_FORMATS else "png"


def with_image_format(config: dict | None) -> dict | None:
    """``config`` with its camera saving in :func:`image_format` (a copy; ``config`` without a camera unchanged)."""
    camera = (config or {}).get("toImageButtonOptions")
    if not isinstance(camera, Mapping) or camera.get("format") == image_format():
        return config
    return {**config, "toImageButtonOptions": {**camera, "format": image_format()}}


def chart(fig: Any, *, key: str | None = None, config: dict | None = None,
          on_select: str | Callable[[], Any] = "ignore",
          selection_mode: str | Iterable[str] = ("points", "box", "lasso"), target: Any = None) -> None:
    """Draw ``fig`` as ``target.plotly_chart(fig, key=..., config=..., on_select=..., selection_mode=...)`` would.

    ``target``: ``st`` (None), a column, a container or a placeholder. ``on_select``: ``"ignore"``, ``"rerun"`` or
    a callback; with a callback or ``"rerun"`` a click selects points (``selection_mode`` must allow ``"points"``).
    The camera of ``config`` saves in the sidebar's format (:func:`with_image_format`).
    """
    where = target if target is not None else st
    # every chart's camera saves what the sidebar chose, also where a caller built its config without the choice
    config = with_image_format(config)
    if (reason := fallback_reason()) is not None:
        _note_fallback(reason)
        where.plotly_chart(unthemed(fig), key=key, config=config, on_select=on_select, selection_mode=selection_mode)
        return
    modes = {selection_mode} if isinstance(selection_mode, str) else set(selection_mode)
    select = on_select != "ignore" and "points" in modes
    # the modes st.plotly_chart would enable (its modebar keeps lasso/box select only for those), none when ignored
    enabled = sorted(modes & {"points", "box", "lasso"}) if on_select != "ignore" else []
    figure, cells = cell_clicks(fig if isinstance(fig, Spec) else spec(fig), select)
    data = {"figure": figure, "config": config or {}, "select": select, "cells": cells and select, "modes": enabled,
            "base": "./app/static/plotly/", "bundle": BUNDLE, "locale": LOCALE if i18n.language() == "zh" else ""}
    kwargs: dict[str, Any] = {}
    if select and key is not None:
        kwargs["on_select_change"] = functools.partial(_store, key, on_select if callable(on_select) else None)
    mount = functools.partial(_element(), key=None if key is None else key + SUFFIX, data=data, **kwargs)
    if where is st:
        mount()
    else:
        with where:
            mount()
