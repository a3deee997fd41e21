"""AppTest of the explorer page: runs cleanly, controls and URL parameters change the figures."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from apptest_utils import by_meta, figures, heatmap_z, new_app


def run(**query):
    at = new_app(**query)
    at.run()
    assert not at.exception, at.exception
    return at


def test_default_page_shows_every_stage_per_head():
    at = run()
    for stage in ("scores", "masked_scores", "weights", "context"):
        figs = by_meta(at, stage)
        assert [f["layout"]["meta"]["head"] for f in figs] == list(range(8)), stage
    assert not at.warning


def test_causal_makes_weights_zero_above_diagonal_and_rows_sum_to_one():
    at = run(text="the cat saw the dog", causal="1", n_heads="4")
    figs = by_meta(at, "weights")
    assert len(figs) == 4
    for fig in figs:
        z = heatmap_z(fig)  # blocked cells are blank (NaN here), never a number
        upper = np.triu_indices(5, k=1)
        assert np.isnan(z[upper]).all()
        np.testing.assert_allclose(np.nansum(z, axis=1), 1.0, atol=1e-5)
        assert np.isfinite(z[np.tril_indices(5)]).all()


def test_toggling_causal_in_the_sidebar_changes_the_figures():
    at = run(text="the cat saw the dog")
    before = heatmap_z(by_meta(at, "weights")[0])
    assert np.isfinite(before).all()
    at.sidebar.toggle(key="shared_causal").set_value(True).run()
    after = heatmap_z(by_meta(at, "weights")[0])
    assert np.isnan(after[0, 1:]).all() and after[0, 0] == pytest.approx(1.0)
    assert at.query_params["causal"] == "1"


def test_n_heads_control_sets_the_number_of_heads_and_only_divisors_are_offered():
    at = run(d_model="48")
    box = at.sidebar.selectbox(key="shared_n_heads")
    assert list(box.options) == ["1", "2", "3", "4", "6", "8", "12", "16"]
    box.set_value(3).run()
    assert len(by_meta(at, "weights")) == 3
    assert at.query_params["n_heads"] == "3"


def test_changing_d_model_keeps_n_heads_valid_with_a_note():
    at = run(d_model="64", n_heads="16")
    at.sidebar.selectbox(key="shared_d_model").set_value(96).run()
    assert not at.exception
    assert at.session_state["shared_n_heads"] in (1, 2, 3, 4, 6, 8, 12, 16)
    assert 96 % at.session_state["shared_n_heads"] == 0


def test_padding_hides_pad_keys_of_the_short_sentence():
    at = run(text="one two three four\nshort", padding="1")
    at.radio(key="explorer_batch").set_value(1).run()
    z = heatmap_z(by_meta(at, "weights")[0])
    assert z.shape == (4, 4)
    assert np.isnan(z[:, 1:]).all() and np.allclose(z[:, 0], 1.0)


@pytest.mark.parametrize("text", [
    "", "   \n  ", "x", "a" * 2000, "😀 👍🏽 👨‍👩‍👧 猫が好き 我爱猫", "مرحبا بالعالم שלום עולם",
    "<script>alert(1)</script> <b>bold</b> &amp;", "word " * 400,
])
def test_awkward_text_never_raises_or_shows_nan(text):
    at = run(text=text)
    for fig in by_meta(at, "scores") + by_meta(at, "context"):
        assert np.isfinite(heatmap_z(fig)).all()  # nothing blank before masking
    for fig in by_meta(at, "weights"):
        z = heatmap_z(fig)  # blank (NaN) = blocked; every shown row sums to 1
        shown = ~np.isnan(z).all(axis=1)
        np.testing.assert_allclose(np.nansum(z[shown], axis=1), 1.0, atol=1e-5)
    for fig in figures(at):  # no bare NaN/Infinity JSON values (base64 array bytes may contain the letters)
        assert not re.search(r"[:\[,]\s*-?(NaN|Infinity)\b", json.dumps(fig))


def test_html_tokens_are_escaped_in_tick_labels():
    at = run(text="<b>bold</b>")
    fig = by_meta(at, "weights")[0]
    labels = fig["layout"]["yaxis"]["ticktext"]
    assert "0: &lt;" in labels and not any("<b>" in t for t in labels)


def test_causal_and_padding_leave_all_padding_query_rows_marked_not_nan():
    at = run(text="a b c\nz", causal="1", padding="1")
    at.radio(key="explorer_batch").set_value(1).run()
    fig = by_meta(at, "weights")[0]
    z = heatmap_z(fig)
    assert np.allclose(z[:, 0], 1.0) and np.isnan(z[:, 1:]).all()


@pytest.mark.parametrize("query, note", [
    ({"d_model": "abc"}, "d_model=abc"),
    ({"n_heads": "5"}, "n_heads=5"),
    ({"causal": "maybe"}, "causal=maybe"),
    ({"seed": "-3"}, "seed=-3"),
])
def test_malformed_url_parameters_fall_back_with_a_visible_note(query, note):
    at = run(**query)
    assert any(note in w.value.replace("\\", "") for w in at.warning)  # notes are Markdown-escaped
    assert by_meta(at, "weights")


def test_url_parameters_set_the_controls():
    at = run(text="hello world", d_model="32", n_heads="2", causal="1", padding="0", seed="7")
    ss = at.session_state
    assert (ss["shared_text"], ss["shared_d_model"], ss["shared_n_heads"], ss["shared_causal"],
            ss["shared_padding"], ss["shared_seed"]) == ("hello world", 32, 2, True, False, 7)
    assert len(by_meta(at, "weights")) == 2


def test_seed_changes_the_numbers():
    a = heatmap_z(by_meta(run(text="a b c", seed="1"), "scores")[0])
    b = heatmap_z(by_meta(run(text="a b c", seed="2"), "scores")[0])
    assert not np.allclose(a, b)


def test_every_stage_offers_csv_and_the_page_offers_json_and_html():
    at = run(text="the cat saw the cat")
    labels = [b.proto.label for b in at.get("download_button")]
    assert sum("CSV" in label for label in labels) == 4
    assert any("JSON" in label for label in labels) and any("HTML" in label for label in labels)


def test_camera_button_format_follows_the_sidebar_choice():
    at = run(text="a b")
    at.sidebar.radio(key="shared_image_format").set_value("svg").run()
    chart = at.get("plotly_chart")[0].proto
    assert '"format": "svg"' in chart.config.replace('":"', '": "') and "weights" in json.dumps(
        [json.loads(c.proto.config) for c in at.get("plotly_chart")])
