"""The guided lessons in headless Chromium at 1280×720, in English and 中文: every step of lessons 1 (the toy model)
and 5 (SmolLM2) draws its figure and asks its question with the answer hidden; a click on a choice shows the answer,
said right or wrong, inside the first screen; the figure and the question are not cut at the right edge. Screenshots
before and after each choice go to tmp_path (or $ATTENTION_DOCS_IMAGES), never into the checkout."""
from __future__ import annotations

import pytest
from browser_utils import chromium_missing, images_folder, wait_idle

from ui.guided import catalog

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

WIDTH, HEIGHT = 1280, 720
ANSWER = '[data-testid="stMain"] [data-testid="stAlertContainer"]'
QUESTION = '[data-testid="stMain"] [data-testid="stRadio"]'
CHART = '[data-testid="stMain"] .js-plotly-plot'


def box(page, selector: str) -> dict | None:
    return page.evaluate("""(s) => { const e = document.querySelector(s); if (!e) return null;
        const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left, right: r.right,
        text: e.innerText}; }""", selector)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("lesson", [1, 5])
def test_lesson_walk_asks_then_answers_in_view(server, chromium, lesson, lang, tmp_path, request):
    if lesson == 5:
        request.getfixturevalue("smollm2_or_skip")
    folder = images_folder(tmp_path)
    page = chromium.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        for step in range(1, catalog.COUNTS[lesson - 1] + 1):
            page.goto(f"{server}/guided?lesson={lesson}&step={step}&lang={lang}")
            wait_idle(page, timeout_ms=180_000)
            chart, question = box(page, CHART), box(page, QUESTION)
            assert chart and question, (chart, question)
            assert chart["right"] <= WIDTH and question["right"] <= WIDTH, (chart, question)
            assert question["top"] < HEIGHT, question  # the question is in the first screen
            assert box(page, ANSWER) is None, "the answer shows before a choice"
            page.screenshot(path=str(folder / f"guided-{lang}-L{lesson}S{step}-ask.png"))
            page.locator(f"{QUESTION} [data-testid=\"stRadioGroup\"] label").first.click()
            page.wait_for_selector(ANSWER, timeout=60_000)
            wait_idle(page, timeout_ms=180_000)
            answer = box(page, ANSWER)
            assert 0 <= answer["top"] and answer["bottom"] <= HEIGHT, answer  # in view without scrolling
            right = ("Right", "Not quite") if lang == "en" else ("正确", "不对")
            said = answer["text"].split("\n", 1)[-1].strip()  # after the icon's name (check_circle, cancel)
            assert said.startswith(right), said[:80]
            page.screenshot(path=str(folder / f"guided-{lang}-L{lesson}S{step}-answer.png"))
    finally:
        page.close()
