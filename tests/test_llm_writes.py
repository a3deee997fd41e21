"""The SmolLM2 page's "What the heads write" (AppTest): attribution and the logit lens come from the prompt's one run
(no other forward call) and equal the core's numbers; target and contrast go to and come from the URL; a corrupted
prompt of another length gets a clear message in the page's language; patched numbers are the core's."""
from __future__ import annotations

import numpy as np
import pytest
from apptest_utils import decode, figures, new_app

PAGE = "pages/llm.py"
IOI = "When Mary and John went to the store, John gave a drink to"


@pytest.fixture(scope="module")
def smollm2(smollm2_or_skip):
    from transformer_core.models.smollm2 import load_smollm2

    return load_smollm2()


def ids_of(tokenizer, *words):
    return [tokenizer.encode(w, add_special_tokens=False).ids[0] for w in words]


def open_page(**query):
    at = new_app(**query)
    at.switch_page(PAGE).run(timeout=600)
    assert not at.exception, [e.message for e in at.exception]
    return at


def view(at, name: str, **meta) -> dict:
    return next(f for f in figures(at) if f["layout"].get("meta", {}).get("view") == name
                and all(f["layout"]["meta"].get(k) == v for k, v in meta.items()))


def test_attribution_and_lens_come_from_the_one_run_and_equal_the_core(smollm2):
    from transformer_core.analysis.logit_attribution import direct_logit_attribution, head_outputs
    from transformer_core.models.smollm2_trace import run_smollm2

    model, tokenizer = smollm2
    calls = []
    handle = model.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        at = open_page(lens="1")
    finally:
        handle.remove()
    assert len(calls) == 1  # the prompt's one run (the ablation section's IOI prompt is the same prompt: cached)
    assert not any(f["layout"].get("meta", {}).get("view") == "logit_lens" for f in figures(open_page()))  # closed
    mary, john = ids_of(tokenizer, " Mary", " John")
    assert at.selectbox(key="llm_target").value == mary and at.selectbox(key="llm_contrast").value == john
    _trace, prediction = run_smollm2(IOI, residuals=True, only=lambda n: False)
    parts = prediction["parts"]
    core = direct_logit_attribution(model, {**parts, "heads": head_outputs(model, parts["contexts"])}, mary, john)
    dla = view(at, "dla")
    z = np.asarray(decode(dla["data"][0]["z"]), float)  # [layer, head + MLP]
    np.testing.assert_allclose(z[:, :9], core["heads"], atol=1e-6)
    np.testing.assert_allclose(z[:, 9], core["mlps"], atol=1e-6)
    said = next(m.value for m in at.markdown if "add up to the answer" in m.value)
    assert f"**{core['total']:+.3f}**" in said and f"**{core['logit_diff']:+.3f}**" in said
    assert core["total"] == pytest.approx(core["logit_diff"], abs=1e-3)
    lens = view(at, "logit_lens")
    prob = np.asarray(decode(lens["data"][0]["z"]), float)  # [row, pos]
    assert prob.shape == (31, 14)
    np.testing.assert_allclose(prob[-1], prediction["probs"][:, mary], atol=1e-5)  # the last row: the model's own
    assert lens["data"][0]["text"][-1][-1] == "␣Mary"


def test_target_and_contrast_round_trip_the_url_and_a_bad_one_gets_a_note(smollm2):
    _model, tokenizer = smollm2
    mary, john = ids_of(tokenizer, " Mary", " John")
    at = open_page(target=str(john), contrast="none")
    assert at.selectbox(key="llm_target").value == john and at.selectbox(key="llm_contrast").value == "none"
    assert at.query_params["target"] == str(john)
    assert any("pick a contrast token" in i.value for i in at.info)  # patching needs a difference
    at.selectbox(key="llm_contrast").set_value(mary).run(timeout=600)
    assert at.query_params["contrast"] == str(mary)
    bad = open_page(target="not-a-token")
    assert bad.selectbox(key="llm_target").value == mary  # the default, with a note
    notes = " ".join(w.value for w in bad.warning).replace("\\", "")  # Markdown escapes
    assert "target=not-a-token" in notes


@pytest.mark.parametrize("lang, words", [("en", "patching needs the same number"), ("zh", "词元数必须相同")])
def test_a_corrupted_prompt_of_another_length_says_so(smollm2, lang, words):
    at = open_page(lang=lang, corrupt="Mary")
    assert at.text_input(key="llm_corrupt").value == "Mary"
    at.button(key="llm_patch_button").click().run(timeout=600)
    assert not at.exception
    assert any(words in w.value for w in at.warning), [w.value for w in at.warning]


def test_the_default_corrupted_prompt_flips_the_answer_and_patching_shows_the_cores_numbers(smollm2):
    from ui.llm import compute

    at = open_page()
    corrupt = at.text_input(key="llm_corrupt").value
    assert corrupt == "When Mary and John went to the store, Mary gave a drink to"
    at.button(key="llm_patch_button").click().run(timeout=900)
    assert not at.exception, [e.message for e in at.exception]
    _model, tokenizer = smollm2
    mary, john = ids_of(tokenizer, " Mary", " John")
    core = compute.patched(compute.DEFAULT, IOI, corrupt, mary, john)  # the page's cached result
    heads = np.asarray(decode(view(at, "patching", of="heads")["data"][0]["z"]), float)
    positions = np.asarray(decode(view(at, "patching", of="positions")["data"][0]["z"]), float)
    np.testing.assert_allclose(heads, core["heads"], atol=1e-6)
    np.testing.assert_allclose(positions, core["positions"], atol=1e-6)
    assert core["ld_clean"] > 0 > core["ld_corrupt"]
    caption = next(c.value for c in at.caption if "Logit difference clean" in c.value)
    assert f"clean {core['ld_clean']:+.3f}, corrupted {core['ld_corrupt']:+.3f}" in caption


def test_the_typed_prompt_survives_a_visit_to_another_page(smollm2):
    """Streamlit drops a widget's state when its page is left, and the menu's link carries no ?prompt=: the page
    keeps the student's prompt itself instead of showing the example again."""
    at = open_page()
    at.text_area(key="llm_prompt").set_value("The teacher asked the class a question").run(timeout=600)
    at.switch_page("pages/masks_lab.py").run(timeout=600)
    for key in list(at.query_params):  # the menu's link: no parameters
        del at.query_params[key]
    at.switch_page(PAGE).run(timeout=600)
    assert not at.exception, [e.message for e in at.exception]
    assert at.text_area(key="llm_prompt").value == "The teacher asked the class a question"
