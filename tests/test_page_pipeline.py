"""AppTest: the multi-head pipeline page runs, follows n_heads, checks Conv1d = Linear, compares two settings."""
import json
import re

import numpy as np
import pytest
import streamlit as st
from test_page_masks_lab import open_page, z_of

PAGE = "pages/pipeline.py"


def figures_of(at):
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def steps(at, step):
    return [f for f in figures_of(at) if f["layout"].get("meta", {}).get("step") == step]


def text(at):
    return "\n".join([m.value for m in at.markdown] + [i.value for i in at.info])


def param_text(at):
    return next(i.value for i in at.info if "parameters" in i.value)


@pytest.fixture
def at(monkeypatch):
    yield open_page(PAGE, monkeypatch)
    st.cache_data.clear()


def test_runs_every_step_and_no_nan(at):
    titles = [s.value for s in at.subheader]
    assert [int(t.split(" · ")[0]) for t in titles] == list(range(1, 12))
    for spec in (chart.proto.spec for chart in at.get("plotly_chart")):
        assert not re.search(r"[:\[,]\s*-?(NaN|Infinity)\b", spec)  # base64 bytes may spell "NaN"
    assert len(steps(at, "q")) == 8 and len(steps(at, "weights")) == 8


def test_n_heads_changes_the_split_not_the_parameter_count(at):
    before = param_text(at)
    assert "[batch=1, head=8, pos=7, d_k=8]" in text(at)
    at.selectbox(key="shared_n_heads").set_value(4).run()
    assert not at.exception
    assert "[batch=1, head=4, pos=7, d_k=16]" in text(at)
    assert "head=8" not in text(at)
    assert len(steps(at, "q")) == 4
    after = param_text(at)
    count = re.compile(r"\*\*([\d,]+) parameters\*\*")
    assert count.search(before).group(1) == count.search(after).group(1) == f"{4 * (64 * 64 + 64) + 2 * 64:,}"
    assert "n_heads=4" in after and "n_heads=8" in before
    table = next(d.value for d in at.dataframe if "parameters" in d.value.columns)
    assert table["parameters"].nunique() == 1


def test_conv1d_equals_linear(at):
    line = next(m.value for m in at.markdown if m.value.startswith("max |Linear − Conv1d|"))
    value = float(re.search(r"`([^`]+)`", line).group(1))
    assert value < 1e-5
    linear, conv = z_of(steps(at, "ff_linear")[0]), z_of(steps(at, "ff_conv1d")[0])
    assert np.allclose(linear, conv, atol=1e-5)


def test_sidebar_causal_blanks_the_upper_triangle(at):
    at.toggle(key="shared_causal").set_value(True).run()
    weights = z_of(steps(at, "weights")[0])
    n = weights.shape[0]
    assert np.array_equal(np.isnan(weights), ~np.tril(np.ones((n, n), bool)))


def test_side_by_side_forms(at):
    a, b = (z_of(f) for f in figures_of(at) if f["layout"]["meta"].get("side") in ("a", "b"))
    assert not np.isnan(b).any()
    diff_before = z_of(steps(at, "output_diff")[0])
    at.toggle(key="pipeline_b_causal").set_value(True)
    next(b for b in at.button if b.label == "Apply B").click().run()
    assert not at.exception
    b = z_of(next(f for f in figures_of(at) if f["layout"]["meta"].get("side") == "b"))
    n = b.shape[0]
    assert np.array_equal(np.isnan(b), ~np.tril(np.ones((n, n), bool)))
    assert not np.allclose(z_of(steps(at, "output_diff")[0]), diff_before)
    assert any("head-averaged weights, B − A" in f["layout"]["title"]["text"] for f in figures_of(at))
