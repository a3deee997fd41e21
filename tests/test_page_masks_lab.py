"""AppTest: the masks lab page runs, its controls change what they should, and no NaN reaches a figure."""
import base64
import json
import re
import pathlib

import numpy as np
import pytest
import streamlit as st
import torch
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

from chart_specs import charts
from transformer_core.nn import masks
from ui.shell import cache as ui_cache

APP = str(pathlib.Path(__file__).resolve().parent.parent / "app.py")
PAGE = "pages/masks_lab.py"


def decode(value):
    """Plotly ≥ 6 writes numpy arrays as ``{"dtype", "bdata", "shape"}``; lists pass through."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        if shape:
            array = array.reshape([int(s) for s in str(shape).split(",")])
        return array
    return value


def figures_of(at):
    return [json.loads(chart.proto.spec) for chart in charts(at)]


def by_meta(at, **meta):
    return [f for f in figures_of(at) if all(f["layout"].get("meta", {}).get(k) == v for k, v in meta.items())]


def z_of(fig):
    """The heatmap's z as a float array (None → nan, for comparisons only)."""
    z = decode(next(t for t in fig["data"] if t["type"] == "heatmap")["z"])
    return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=float)


def open_tab(at, label):
    """Open one section tab (only the open tab runs: lazy tabs bound to ?section=)."""
    at.session_state["section"] = label
    at.run()
    assert not at.exception, at.exception
    return at


def all_text(at):
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.code])


def open_page(page, monkeypatch):
    """AppTest from the entrypoint, switched to ``page``, caches cleared.

    AppTest resets ``PagesManager.uses_pages_directory`` before every run, so each run starts in
    the legacy ``pages/`` mode that a real server leaves after its first visitor
    (``ui.nav.leave_legacy_mode``); in that mode a page whose url_path equals its file name is run
    without the entrypoint (no sidebar, stale settings). Keep the flag off, as on a served app.
    """
    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)
    st.cache_data.clear()
    ui_cache.clear_all()
    app = AppTest.from_file(APP, default_timeout=120)
    app.switch_page(page).run()  # straight to the page, as a deep link does
    assert not app.exception, [e.message for e in app.exception]
    assert app.sidebar.selectbox, "the page must run through the entrypoint (shared sidebar)"
    return app


@pytest.fixture
def at(monkeypatch):
    yield open_page(PAGE, monkeypatch)
    st.cache_data.clear()
    ui_cache.clear_all()


SECTIONS = ["Causal and padding", "Two conventions", "Cached prefix", "Keys vs queries", "Dropout"]


def test_runs_and_no_nan_reaches_a_figure(at):
    headers = []
    for label in SECTIONS:
        open_tab(at, label)
        specs = [chart.proto.spec for chart in charts(at)]
        assert 1 <= len(specs) <= 6  # a handful of charts per view
        for spec in specs:
            assert not re.search(r"[:\[,]\s*-?(NaN|Infinity)\b", spec)  # base64 bytes may spell "NaN"
        headers += [h.value for h in at.header]
    assert [h.split(" · ")[0] for h in headers] == ["1", "2", "3", "4", "5"]


def _gallery(at, kind):
    at.segmented_control(key="masks_kind").set_value(kind).run()
    return at


def test_gallery_panels_share_one_colour_range_across_the_three_masks(at):
    ranges = set()
    for kind in ("causal", "padding", "both"):
        fig = by_meta(_gallery(at, kind), kind="pattern", section=kind)
        ranges |= {(f["data"][0]["zmin"], f["data"][0]["zmax"]) for f in fig}
    assert len(ranges) == 2  # one for scores (symmetric), one for weights


def test_masks_are_boolean_and_right(at):
    trace_tokens = at.dataframe[0].value  # token table: two sentences
    n = trace_tokens.shape[1]
    length = int((trace_tokens.iloc[at.selectbox(key="masks_batch").value] != "[PAD]").sum())
    causal, padding, both = (z_of(by_meta(_gallery(at, k), kind="mask", section=k)[0])
                             for k in ("causal", "padding", "both"))
    for z in (causal, padding, both):
        assert set(np.unique(z)) <= {0.0, 1.0}
    assert np.array_equal(causal, np.tril(np.ones((n, n))))
    expected_padding = np.zeros((n, n))
    expected_padding[:, :length] = 1
    assert np.array_equal(padding, expected_padding)
    assert np.array_equal(both, causal * padding)
    # the masked scores are blank exactly where the mask blocks
    masked = z_of(by_meta(at, kind="pattern", section="both")[0])
    assert np.array_equal(np.isnan(masked), both == 0)


def test_conventions_live(at):
    open_tab(at, "Two conventions")
    zs = {(f["data"][0]["zmin"], f["data"][0]["zmax"]) for f in by_meta(at, section="conventions")}
    assert len(zs) == 1  # the three recipes share one colour range
    text = all_text(at)
    assert "max |seed 000 − seed 001| = `0`" in text
    table = next(d.value for d in at.dataframe if "seed 000 · weight" in d.value.index)
    assert (table.loc["seed 000 · weight"] == "NaN").all()
    n = table.shape[1]
    assert (table.loc["seed 001 · weight"] == f"{1 / n:.4f}").all()
    assert (table.loc["ours · weight"] == "0.0000").all()
    at.selectbox(key="masks_empty_row").set_value(3).run()
    assert "**Row 3" in all_text(at)


def test_float16_section_shows_the_real_behaviour(at):
    open_tab(at, "Two conventions")
    try:
        torch.zeros(2, dtype=torch.float16).masked_fill(torch.tensor([True, False]), -1e9)
        expected = "ok"
    except RuntimeError as err:
        expected = str(err)
    code = "\n".join(c.value for c in at.code)
    assert expected in code
    assert f"torch.tensor(-1e9, dtype=torch.float16)" in code
    assert str(torch.tensor(-1e9, dtype=torch.float16).item()) in code  # -inf in torch 2.13


def test_prefix_alignment(at):
    length = int((at.dataframe[0].value.iloc[at.selectbox(key="masks_batch").value] != "[PAD]").sum())
    open_tab(at, "Cached prefix")
    at.slider(key="masks_n_new").set_value(2).run()
    top_left = z_of(by_meta(at, kind="mask", section="prefix", align="top-left")[0])
    bottom_right = z_of(by_meta(at, kind="mask", section="prefix", align="bottom-right")[0])
    assert np.array_equal(bottom_right, masks.causal_mask(2, length).numpy().astype(float))
    assert np.array_equal(top_left, np.tril(np.ones((2, length))))
    diffs = [m.value for m in at.markdown if m.value.startswith("max |weights − full-sentence")]
    assert diffs[1].endswith("= `0`") and not diffs[0].endswith("= `0`")


def test_keys_vs_queries(at):
    open_tab(at, "Keys vs queries")
    zs = {(f["data"][0]["zmin"], f["data"][0]["zmax"]) for f in by_meta(at, kind="pattern", section="keys-queries")}
    assert len(zs) == 1  # the three variants share one colour range
    summary = next(d.value for d in at.dataframe if "keys and queries" in d.value.columns)
    assert summary.loc["largest weight a real query puts on [PAD] keys", "keys"] == "0.0000"
    assert summary.loc["largest weight a real query puts on [PAD] keys", "queries"] != "0.0000"
    assert summary.loc["real rows: max |Δ| vs keys-only", "keys and queries"] == "0.0000"
    assert summary.loc["rows that are NaN with seed 000 (−inf)", "keys and queries"] != "0"


def _sums(at):
    frame = next(d.value for d in at.dataframe if list(d.value.columns) == ["before", "after"])
    return frame["before"].astype(float).to_numpy(), frame["after"].astype(float).to_numpy()


def test_training_toggle_changes_dropout(at):
    open_tab(at, "Dropout")
    before, after = _sums(at)
    assert np.allclose(before, 1) and np.allclose(after, 1)  # eval mode: dropout is the identity
    eval_after = z_of(by_meta(at, section="dropout", which="after")[0])
    at.toggle(key="masks_training").set_value(True).run()
    assert not at.exception
    before, after = _sums(at)
    assert np.allclose(before, 1) and not np.allclose(after, 1)
    train_after = z_of(by_meta(at, section="dropout", which="after")[0])
    assert not np.array_equal(np.nan_to_num(train_after), np.nan_to_num(eval_after))
    survivors = train_after[np.nan_to_num(train_after) > 0]
    assert survivors.size  # p = 0.3 keeps most weights, scaled by 1 / (1 − p)
    at.slider(key="masks_dropout_p").set_value(0.6).run()
    assert not np.array_equal(_sums(at)[1], after)
    assert (at.query_params["train"], at.query_params["p"]) == ("1", "0.6")


def test_one_sentence_gets_an_example_and_head_follows_n_heads(at):
    at.text_area(key="shared_text").set_value("A single sentence here").run()
    assert not at.exception
    assert at.dataframe[0].value.shape[0] == 2
    assert "Padding needs a batch" in all_text(at)
    at.selectbox(key="masks_head").set_value(7).run()
    at.selectbox(key="shared_n_heads").set_value(2).run()
    assert not at.exception
    assert at.selectbox(key="masks_head").options == ["0", "1"]
    for spec in (chart.proto.spec for chart in charts(at)):
        assert not re.search(r"[:\[,]\s*-?(NaN|Infinity)\b", spec)  # base64 bytes may spell "NaN"
