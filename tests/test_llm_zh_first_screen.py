"""The SmolLM2 page in 中文 opens on a prompt the model answers with a whole character, and a Chinese prompt whose
most likely next token is only a byte piece says so beside the predictions, in the page's language."""
from __future__ import annotations

import re

import numpy as np
import pytest

from apptest_utils import decode, figures, new_app

PAGE = "pages/llm.py"
FAILING = "小明和小红去了商店，小明把一杯水递给了"  # its top token is <0xE4><0xBB>, half a character


@pytest.fixture(scope="module", autouse=True)
def _smollm2(smollm2_or_skip):
    return smollm2_or_skip


def open_page(**query):
    at = new_app(**query)
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def bars(at) -> tuple[list[str], np.ndarray]:
    fig = next(f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == "predictions")
    return list(fig["data"][0]["y"]), np.asarray(decode(fig["data"][0]["x"]), float)


def test_the_chinese_first_screen_shows_a_whole_character_on_top():
    at = open_page(lang="zh")
    prompt = at.text_area(key="llm_prompt").value
    assert re.search(r"[\u4e00-\u9fff]", prompt)
    labels, probs = bars(at)
    assert labels[0] == "人" and probs[0] > 0.9, (labels, probs)  # a real character, the one the pattern asks for
    assert not at.warning  # no failure notice on the example


@pytest.mark.parametrize("lang, word", [("zh", "失败"), ("en", "fails")])
def test_a_chinese_prompt_that_fails_says_so_beside_the_predictions(lang, word):
    at = open_page(lang=lang, prompt=FAILING)
    labels, _probs = bars(at)
    assert labels[0].startswith("<0xE4><0xBB>")
    notes = [w.value for w in at.warning]
    assert any(word in n and "0xE4" in n for n in notes), notes


def test_an_english_prompt_gets_no_failure_note():
    at = open_page(lang="zh", prompt="When Mary and John went to the store, John gave a drink to")
    assert not at.warning
