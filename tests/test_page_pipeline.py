"""AppTest: the multi-head pipeline page runs, follows n_heads, checks Conv1d = Linear, compares two settings."""
import json
import re

import numpy as np
import pytest
import streamlit as st
from chart_specs import charts
from test_page_masks_lab import open_page, z_of
from ui.shell import cache as ui_cache

PAGE = "pages/pipeline.py"


def figures_of(at):
    return [json.loads(chart.proto.spec) for chart in charts(at)]


def steps(at, step):
    return [f for f in figures_of(at) if f["layout"].get("meta", {}).get("step") == step]


TABS = ["Projections", "Split heads", "Attention", "Concat and W_O", "Feed-forward", "A vs B"]


def open_tab(at, label):
    """Open one tab of the page (only the open tab runs: lazy tabs bound to ?step=)."""
    at.session_state["step"] = label
    at.run()
    assert not at.exception, at.exception
    return at


def tiles_of(at, step):
    """The all-heads figure of one step and its head count."""
    figs = steps(at, step)
    assert len(figs) == 1 and figs[0]["layout"]["meta"]["stage"] == "heads"
    return figs[0], figs[0]["layout"]["meta"]["n_heads"]


def text(at):
    return "\n".join([m.value for m in at.markdown] + [i.value for i in at.info])


def param_text(at):
    return next(i.value for i in at.info if "parameters" in i.value)


@pytest.fixture
def at(monkeypatch):
    yield open_page(PAGE, monkeypatch)
    st.cache_data.clear()
    ui_cache.clear_all()


def test_runs_every_step_one_tab_at_a_time_and_no_nan(at):
    numbers = []
    for label in TABS:
        open_tab(at, label)
        numbers += [int(t.value.split(" · ")[0]) for t in at.subheader if " · " in t.value]
        assert len(charts(at)) <= 4  # a handful of charts per view, never one per head
        for spec in (chart.proto.spec for chart in charts(at)):
            assert not re.search(r"[:\[,]\s*-?(NaN|Infinity)\b", spec)  # base64 bytes may spell "NaN"
    assert numbers == list(range(1, 12))
    open_tab(at, "Split heads")
    assert tiles_of(at, "q")[1] == 8
    open_tab(at, "Attention")
    assert tiles_of(at, "weights")[1] == 8


def test_n_heads_changes_the_split_not_the_parameter_count(at):
    before = param_text(at)
    open_tab(at, "Split heads")
    assert "[batch=1, head=8, pos=7, d_k=8]" in text(at)
    at.selectbox(key="shared_n_heads").set_value(4).run()
    assert not at.exception
    assert "[batch=1, head=4, pos=7, d_k=16]" in text(at)
    assert "head=8" not in text(at)
    assert tiles_of(at, "q")[1] == 4
    after = param_text(at)
    count = re.compile(r"\*\*([\d,]+) parameters\*\*")
    assert count.search(before).group(1) == count.search(after).group(1) == f"{4 * (64 * 64 + 64) + 2 * 64:,}"
    assert "n_heads=4" in after and "n_heads=8" in before
    at.session_state["pipeline_params_box"] = True  # what opening the box does (ui/shell/lazy.py)
    at.run()
    table = next(d.value for d in at.dataframe if "parameters" in d.value.columns)
    assert table["parameters"].nunique() == 1


def test_conv1d_equals_linear(at):
    open_tab(at, "Feed-forward")
    line = next(m.value for m in at.markdown if m.value.startswith("max |Linear − Conv1d|"))
    value = float(re.search(r"`([^`]+)`", line).group(1))
    assert value < 1e-5
    linear, conv = z_of(steps(at, "ff_linear")[0]), z_of(steps(at, "ff_conv1d")[0])
    assert np.allclose(linear, conv, atol=1e-5)


def test_sidebar_causal_blanks_the_upper_triangle(at):
    open_tab(at, "Attention")
    at.toggle(key="shared_causal").set_value(True).run()
    fig, n_heads = tiles_of(at, "weights")
    meta = fig["layout"]["meta"]
    (m, _), (g, gc) = meta["tile"], meta["gutter"]
    weights = z_of(fig)[:m, :m]  # head 0's tile
    assert np.array_equal(np.isnan(weights), ~np.tril(np.ones((m, m), bool)))


def test_side_by_side_settings(at):
    open_tab(at, "A vs B")
    a, b = (z_of(f) for f in figures_of(at) if f["layout"]["meta"].get("side") in ("a", "b"))
    assert not np.isnan(b).any()
    diff_before = z_of(steps(at, "output_diff")[0])
    at.toggle(key="pipeline_b_causal").set_value(True).run()  # applies as made: no Apply button
    assert not at.exception
    b = z_of(next(f for f in figures_of(at) if f["layout"]["meta"].get("side") == "b"))
    n = b.shape[0]
    assert np.array_equal(np.isnan(b), ~np.tril(np.ones((n, n), bool)))
    assert not np.allclose(z_of(steps(at, "output_diff")[0]), diff_before)
    assert any("head-averaged weights, B − A" in f["layout"]["title"]["text"] for f in figures_of(at))


def test_a_and_b_share_one_colour_range_and_travel_in_the_url(at):
    open_tab(at, "A vs B")
    a, b = (f for f in figures_of(at) if f["layout"]["meta"].get("side") in ("a", "b"))
    assert (a["data"][0]["zmin"], a["data"][0]["zmax"]) == (b["data"][0]["zmin"], b["data"][0]["zmax"])
    assert at.query_params["a_heads"] == "1" and at.query_params["b_causal"] == "0"
