"""AppTest of the guided lessons (/guided): every step of every lesson, in English and in Chinese, draws a chart, asks
one question with no choice made, hides the answer until a choice, then says right or wrong with the explanation and
a link to the full page; ``?lesson=&step=`` opens that step and back/next move the URL with it."""
from __future__ import annotations

import pytest
from apptest_utils import charts, figures, new_app

from ui.guided import catalog
from ui.guided.ask import answer_key
from ui.shell.i18n import _

PAGE = "pages/guided.py"
STEPS = [(lesson, step) for lesson, count in enumerate(catalog.COUNTS, 1) for step in range(1, count + 1)]


def open_step(lesson: int, step: int, lang: str = "en", **query):
    at = new_app(lesson=str(lesson), step=str(step), lang=lang, **query)
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def shown(at) -> str:
    return "\n".join([str(e.value) for e in (*at.success, *at.error, *at.markdown)])


@pytest.fixture(scope="module")
def llm_ok():
    from transformer_core.models.gguf_weights import SmolLM2Unavailable
    from transformer_core.models.smollm2 import load_smollm2

    try:
        load_smollm2()
    except SmolLM2Unavailable as err:
        pytest.skip(str(err))


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("lesson, step", STEPS, ids=[f"L{a}S{b}" for a, b in STEPS])
def test_every_step_asks_before_it_answers(lesson, step, lang, request):
    if lesson == 5:
        request.getfixturevalue("llm_ok")
    at = open_step(lesson, step, lang)
    assert len(charts(at)) == 1
    fig = figures(at)[0]
    assert fig["data"], fig  # a figure with a trace, computed for this step
    radio = at.radio(key=answer_key(lesson, step))
    assert radio.value is None and len(radio.options) >= 3
    assert radio.label.strip().endswith(("?", "？", "…"))
    assert not at.success and not at.error, "the answer shows before a choice"
    hint = _("Choose an answer: the explanation appears once you have.", lang)
    assert hint in [c.value for c in at.caption]
    assert at.session_state["guided_step"] == step and at.session_state["guided_lesson"] == lesson
    # a wrong choice first: said plainly, with the right answer named
    correct_label = None
    for choice in range(len(radio.options)):
        at.radio(key=answer_key(lesson, step)).set_value(choice).run()
        assert not at.exception
        assert len(at.success) + len(at.error) == 1
        if at.success:
            correct_label = choice
    assert correct_label is not None, "one choice is the right one"
    assert hint not in [c.value for c in at.caption]
    link = [m.value for m in at.markdown if m.value.startswith("[")]
    assert link and "](./" in link[-1], link


def test_right_and_wrong_are_said_with_the_real_answer():
    """Lesson 1 step 2 (rows add up to 1): the right choice says right with the live row sum, the others say the
    answer is exactly 1."""
    at = open_step(1, 2)
    said = {}
    for choice in range(len(at.radio(key=answer_key(1, 2)).options)):
        at.radio(key=answer_key(1, 2)).set_value(choice).run()
        said[choice] = (at.success or at.error)[0].value
    right = [text for text in said.values() if text.startswith("Right: exactly 1.")]
    assert len(right) == 1 and "(the last row: 1.0000)" in right[0]
    wrong = [text for text in said.values() if text.startswith("Not quite. The answer is exactly 1.")]
    assert len(wrong) == len(said) - 1 == 3


@pytest.mark.parametrize("lang, text", [("en", "the cat sat on the mat"), ("zh", "小猫坐在垫子上。")])
def test_the_scores_question_asks_the_row_with_the_clearest_winner(lang, text):
    """Lesson 1 step 1: the question is about the drawn heatmap's row whose top score leads its second by the most
    (the Chinese example's last row, "。", is a near-tie that no colour tells apart), and the right answer is that
    row's argmax."""
    import numpy as np
    from apptest_utils import heatmap_z

    at = open_step(1, 1, lang, text=text)
    z = heatmap_z(figures(at)[0])
    top_two = np.sort(z, axis=1)[:, -2:]
    row = int(np.argmax(top_two[:, 1] - top_two[:, 0]))
    if lang == "zh":
        assert row != len(z) - 1, "the example no longer shows the near-tie in its last row"
    radio = at.radio(key=answer_key(1, 1))
    assert f" {row}" in radio.label, radio.label
    # beside the question, before the guess, the class is told the weights are random (no meaning to expect)
    said = {"en": "weights are random (seed 0)", "zh": "权重是随机的（种子 0）"}[lang]
    assert any(said in c.value for c in at.caption), [c.value for c in at.caption]
    best = int(np.nanargmax(z[row]))
    right = _("Right: {answer}.", lang).split("{answer}")[0]
    for choice in range(len(radio.options)):
        at.radio(key=answer_key(1, 1)).set_value(choice).run()
        if at.success:
            assert at.success[0].value.startswith(f"{right}{best}\\:")
            return
    raise AssertionError("no choice was right")


def test_url_round_trip_and_next_back():
    at = open_step(2, 3, text="a b c")
    assert at.query_params["lesson"] == "2" and at.query_params["step"] == "3"
    assert at.query_params["text"] == "a b c"
    at.button(key="guided_next").click().run()  # the end of lesson 2: lesson 3, step 1
    assert (at.session_state["guided_lesson"], at.session_state["guided_step"]) == (3, 1)
    assert at.query_params["lesson"] == "3" and at.query_params["step"] == "1"
    at.button(key="guided_back").click().run()
    assert at.query_params["lesson"] == "2" and at.query_params["step"] == "3"
    assert at.radio(key=answer_key(2, 3)).label.startswith("A boolean mask is True")


def test_a_bad_step_in_the_url_falls_back_with_a_note():
    at = open_step(1, 9)
    assert at.session_state["guided_step"] == 1
    assert any("step=9" in w.value for w in at.warning)


def test_progress_says_where_the_learner_is():
    at = open_step(3, 2)
    bar = at.get("progress")[0]
    total = sum(catalog.COUNTS)
    assert bar.proto.value == round(100 * (catalog.COUNTS[0] + catalog.COUNTS[1] + 2) / total)
    assert "Lesson 3 of 5 · step 2 of 3" in bar.proto.text
