"""Helpers for AppTest-based page tests: build the app, read Plotly figures back as numbers."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import streamlit as st
import streamlit.testing.v1.app_test as app_test_module
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

from chart_specs import charts
from ui.shell import cache

APP = str(Path(__file__).resolve().parent.parent / "app.py")


class _ServerLikePagesManager(PagesManager):
    """AppTest re-detects the legacy ``pages/`` mode before *every* run; a real server does it
    once per process, and ``st.navigation`` switches it off for good. Mirror the server, so
    widget state survives reruns (the fresh-server first visit is covered by the browser test)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        PagesManager.uses_pages_directory = False


app_test_module.PagesManager = _ServerLikePagesManager


def new_app(**query) -> AppTest:
    """A fresh AppTest of the entrypoint with empty caches and the given URL query parameters."""
    st.cache_data.clear()
    cache.clear_all()
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    return at


def decode(value):
    """Plotly ≥ 6 typed-array JSON ``{"dtype", "bdata", "shape"}`` → ndarray; other values unchanged."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        return arr.reshape([int(s) for s in str(value["shape"]).split(",")]) if "shape" in value else arr
    return value


def figures(at: AppTest) -> list[dict]:
    """Every Plotly chart on the page as its figure dict."""
    return [json.loads(chart.proto.spec) for chart in charts(at)]


def heatmap_z(fig: dict) -> np.ndarray:
    """The heatmap trace's z as float array with NaN for blank (None) cells."""
    z = decode(fig["data"][0]["z"])
    return np.array([[np.nan if x is None else x for x in row] for row in z], dtype=float)


def by_meta(at: AppTest, stage: str) -> list[dict]:
    """The figures whose ``layout.meta.stage`` is ``stage``, in head order."""
    figs = [f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == stage]
    return sorted(figs, key=lambda f: f["layout"]["meta"]["head"])


def focus(at: AppTest) -> dict:
    """The focused head's figure (the one large heatmap with ``layout.meta.head``)."""
    figs = [f for f in figures(at) if "head" in f["layout"].get("meta", {})]
    assert len(figs) == 1, [f["layout"].get("meta") for f in figures(at)]
    return figs[0]


def tiles(at: AppTest, of: str | None = None) -> tuple[dict, np.ndarray]:
    """The all-heads figure (``meta.stage == "heads"``) and its tiles as ``[head, rows, cols]`` (NaN = blank)."""
    figs = [f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == "heads"
            and (of is None or f["layout"]["meta"]["of"] == of)]
    assert figs, [f["layout"].get("meta") for f in figures(at)]
    fig = figs[0]
    meta = fig["layout"]["meta"]
    z = heatmap_z(fig)
    (m_r, m_c), (g_r, g_c), cols = meta["tile"], meta["gutter"], meta["n_cols"]
    out = [z[r * (m_r + g_r):r * (m_r + g_r) + m_r, c * (m_c + g_c):c * (m_c + g_c) + m_c]
           for r, c in (divmod(h, cols) for h in range(meta["n_heads"]))]
    return fig, np.stack(out)


def without_seed_quotes(text: str) -> str:
    """``text`` without the tutorials' lines that the pages quote verbatim (``ui/tutorial_lines``).

    Seed 000's masking line is ``float('-inf')`` and its comment says the blocked positions become
    ``-inf (负无穷)``: a quotation of the source, not a number the page computed, so a check for nan/inf
    statistics leaves it out (as it leaves out what the user typed). Anything else stays checked.
    """
    from transformer_core.analysis.tutorial_lines import LINES
    from transformer_core.text.i18n import _
    from ui.shell.markdown import plain

    for lines in LINES.values():
        for line in lines:
            for quote in (line.code, _(line.comment, "en"), _(line.comment, "zh")):
                text = text.replace(quote, "").replace(plain(quote), "")
    return text
