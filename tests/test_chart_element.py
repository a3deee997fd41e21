"""Our Plotly element (ui/shell/chart.py) without a browser: the click event reaches the pages' callbacks in
Streamlit's own selection shape, the figure keeps its JSON, the bundle fetched at install is the file its SHA-256 names, and
st.plotly_chart is the fallback (by hand or when the bundle cannot be served)."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import plotly.graph_objects as go
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from transformer_core.figures.heads import picked_head
from transformer_core.figures.overview import picked_tile
from test_fetch_plotly import fetch_plotly
from ui.shell import callbacks, chart

ROOT = Path(__file__).resolve().parent.parent


def test_plotly_points_become_streamlits_selection_event():
    raw = [{"x": "1: cat", "y": "0: The", "z": 0.25, "curveNumber": 1, "pointNumber": 5, "pointIndex": 5,
            "customdata": [1, 1]}, {"curveNumber": 0, "pointNumber": [2, 3], "pointIndices": [7, 5]}]
    event = chart.selection_event(raw)
    assert event == {"selection": {
        "points": [{"x": "1: cat", "y": "0: The", "z": 0.25, "curve_number": 1, "point_number": 5, "point_index": 5,
                    "customdata": [1, 1]}, {"curve_number": 0, "point_number": [2, 3], "point_indices": [7, 5]}],
        "point_indices": [5, 7], "box": [], "lasso": []}}
    points = event["selection"]["points"]
    assert picked_tile(points, n_heads=4) == (1, 1) and picked_head(points[:1]) == 1  # what the pages read


@pytest.mark.parametrize("raw", [None, "points", 3, {"x": 1}, [None, "x", 5]])
def test_anything_else_is_an_empty_selection(raw):
    assert chart.selection_event(raw) == {"selection": {"points": [], "point_indices": [], "box": [], "lasso": []}}


def test_a_click_reaches_the_pages_callback_under_its_own_key(monkeypatch):
    state: dict = {"tiles-chart": {"select": [{"curveNumber": 1, "pointIndex": 6, "customdata": [1, 2]}]}}
    monkeypatch.setattr(st, "session_state", state)
    seen = []
    chart._store("tiles", lambda: seen.append(callbacks.clicked_tile("tiles", n_heads=4)))
    assert seen == [(1, 2)] and state["_last_tile_tiles"] == (1, 2)
    state["tiles-chart"] = {"select": []}  # plotly.js deselects a clicked selected marker: the last tile again
    chart._store("tiles", lambda: seen.append(callbacks.clicked_tile("tiles", n_heads=4)))
    assert seen == [(1, 2), (1, 2)]


def test_the_streamlit_template_is_filled_and_other_figures_are_kept():
    import plotly.io as pio

    with_placeholders = json.loads(go.Figure(go.Bar(y=[1]), layout={"template": pio.templates["streamlit"]}).to_json())
    assert "#000001" in json.dumps(with_placeholders)
    filled = chart.themed(with_placeholders)
    assert not re.search(r"#0000[0-4]\d", json.dumps(filled)) and filled["layout"]["template"] == chart.THEME
    assert filled["data"] == with_placeholders["data"]
    white = json.loads(go.Figure(layout={"template": "plotly_white"}).to_json())
    assert chart.themed(white) == white


def test_the_fetched_bundle_is_the_file_its_sha256_names_with_its_licence():
    sums = fetch_plotly.pinned()
    assert set(sums) == {chart.BUNDLE, chart.LOCALE, "LICENSE"}
    for name, digest in sums.items():
        assert hashlib.sha256((chart.STATIC / name).read_bytes()).hexdigest() == digest
    assert "MIT License" in (chart.STATIC / "LICENSE").read_text()
    assert fetch_plotly.STATIC == chart.STATIC and fetch_plotly.main(["--check"]) == 0
    assert "enableStaticServing = true" in (ROOT / ".streamlit" / "config.toml").read_text()


def test_the_fallback_is_chosen_by_hand_or_when_the_bundle_is_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(st, "get_option", lambda name: True)
    assert chart.fallback_reason() is None
    monkeypatch.setenv(chart.ENV, "streamlit")
    assert chart.fallback_reason() == "ATTENTION_CHART=streamlit"
    monkeypatch.delenv(chart.ENV)
    monkeypatch.setattr(chart, "STATIC", tmp_path)
    assert "missing" in chart.fallback_reason()


def _page():
    import plotly.graph_objects as go
    import streamlit as st

    from ui.shell.chart import chart as draw

    left, _right = st.columns(2)
    draw(go.Figure(go.Heatmap(z=[[1, 2], [3, 4]])), key="hm", on_select=lambda: None, selection_mode="points",
         config={"displaylogo": False}, target=left)


@pytest.mark.parametrize("env, element", [("", "bidi_component"), ("streamlit", "plotly_chart")])
def test_a_page_draws_our_element_or_st_plotly_chart(monkeypatch, env, element):
    monkeypatch.setenv(chart.ENV, env)
    monkeypatch.setattr(chart, "fallback_reason", lambda real=chart.fallback_reason: real() if env else None)
    at = AppTest.from_function(_page).run(timeout=60)
    assert not at.exception
    drawn = at.get(element)
    assert len(drawn) == 1
    if element == "bidi_component":
        data = json.loads(drawn[0].proto.json)
        assert data["select"] and data["config"] == {"displaylogo": False} and data["bundle"] == chart.BUNDLE
        assert data["figure"]["data"][0]["type"] == "heatmap"
    else:
        assert "ATTENTION_CHART=streamlit" in at.caption[0].value  # the note, once a session


def test_no_page_calls_st_plotly_chart_itself():
    calls = [f"{p.relative_to(ROOT)}:{n}" for folder in ("ui", "pages") for p in (ROOT / folder).rglob("*.py")
             if p.name != "chart.py" for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\.plotly_chart\(", line)]
    assert calls == []


@pytest.mark.parametrize("page", [None, "pages/minilm.py", "pages/causal.py"])
def test_the_fallback_draws_the_cached_chart_json_too(monkeypatch, page):
    """With ``st.plotly_chart`` as the fallback, a figure cached as our element's JSON (``chart.Spec``: the head view's
    and the causal overview's) is drawn too: plotly.py refused its filled-in theme ("transparent") with an exception on
    the MiniLM page."""
    from apptest_utils import new_app

    monkeypatch.setenv(chart.ENV, "streamlit")
    at = new_app(text="the cat sat on the mat")
    if page:
        at.switch_page(page)
    at.run()
    assert not at.exception, [e.value[:200] for e in at.exception]
    assert len(at.get("plotly_chart")) >= 2


@pytest.mark.parametrize("n", [6, 40])
def test_a_pattern_is_drawn_without_its_cell_markers_and_says_click_to_explain(n):
    """Our element reads a cell click from the heatmap itself (chart.js), so the transparent marker on every cell that
    st.plotly_chart needs (<= 32 tokens) is not sent; every heatmap's hover gains "click to explain" when a click is
    read, and the figure is otherwise the one exported (kaleido, st.plotly_chart)."""
    from transformer_core import EncoderConfig, run_toy
    from transformer_core.figures.stage import stage_figure

    trace = run_toy([" ".join(f"w{i}" for i in range(n))], EncoderConfig(d_model=16, n_heads=2), causal=True)
    full = chart.spec(stage_figure(trace, "weights", head=1))
    names = [t.get("name") for t in full["data"]]
    assert ("cells" in names) == (n <= 32) and full["layout"]["meta"]["cells"] is True
    drawn, cells = chart.cell_clicks(full, select=True)
    kept = [t.get("name") for t in drawn["data"]]
    assert cells and kept == [{"cells": "cells range"}.get(m, m) for m in names]
    if n <= 32:  # the first and last markers keep the axes' autorange; they take no hover nor click
        corners = next(t for t in drawn["data"] if t.get("name") == "cells range")
        assert corners["x"] == ["0: w0", f"{n - 1}: w{n - 1}"] == corners["y"] and corners["hoverinfo"] == "skip"
    heatmaps = [t for t in drawn["data"] if t["type"] == "heatmap"]
    assert len(heatmaps) == 2  # the values and the masked cells' grey (causal): both answer a click
    assert all(t["hovertemplate"].endswith("<br><b>click to explain</b><extra></extra>") for t in heatmaps)
    assert drawn["layout"] == full["layout"]
    quiet, _ = chart.cell_clicks(full, select=False)  # nothing to click: no hint
    assert all("click to explain" not in t.get("hovertemplate", "") for t in quiet["data"])
    tiles = chart.spec(go.Figure(go.Heatmap(z=[[1, 2]])))
    assert chart.cell_clicks(tiles, select=True) == (tiles, False)


def test_a_wide_pattern_zooms_on_drag_and_a_small_one_does_not_drag():
    """The caption beside a head of more than 32 tokens says "drag over the figure to zoom in": its figure asks for
    zoom (a selectable chart with no drag mode pans, in st.plotly_chart and in our element); a small head with its
    cell markers keeps ``dragmode=False``."""
    from transformer_core import EncoderConfig, run_toy
    from transformer_core.figures.stage import stage_figure

    for n, mode in ((12, False), (40, "zoom")):
        trace = run_toy([" ".join(f"w{i}" for i in range(n))], EncoderConfig(d_model=16, n_heads=2))
        assert stage_figure(trace, "weights").layout.dragmode == mode


def test_the_smollm2_head_grid_hover_names_layer_and_head_once():
    """The head grid's y axis labels every other layer "layer 2"; a hover template reading %{y} printed that tick text
    ("layer layer 2, head 7"; 中文 "第 第 2 层 层"). It reads the cell's own [layer, head]."""
    import numpy as np

    from transformer_core.figures.smollm2 import head_grid_figure

    fig = head_grid_figure(np.random.default_rng(0).random((30, 9)), value_name="score")
    heat = fig.data[0]
    assert "%{y}" not in heat.hovertemplate and "%{customdata[0]}" in heat.hovertemplate
    assert [list(heat.customdata[l][h]) for l, h in ((0, 0), (2, 7), (29, 8))] == [[0, 0], [2, 7], [29, 8]]
    assert "layer 2" in fig.layout.yaxis.ticktext  # the tick text the old template picked up
