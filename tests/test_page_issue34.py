"""Issue 34 in AppTest: nothing cut silently (the explorer says where it cut a long sentence, above its figures, in
the page's language); the masks lab opens on the student's sentence, with Chinese examples in 中文; a computed
"Rank the heads" stays on screen through full reruns until its inputs change."""
from __future__ import annotations

import re

import pytest

from apptest_utils import new_app

LONG = " ".join(f"w{i}" for i in range(300))


def run(**query):
    at = new_app(**query)
    at.run()
    assert not at.exception, at.exception
    return at


def _above_figures(at) -> list[str]:
    """Notes outside the "Tokens, downloads …" expander (the old note sat inside it, collapsed, under the figures)."""
    inside = {e.value for x in at.expander for e in x.info}
    return [e.value for e in at.info if e.value not in inside]


def test_explorer_says_it_cut_a_300_word_sentence_to_128_tokens():
    at = run(text=LONG)
    notes = [n for n in _above_figures(at) if "128" in n]
    assert notes and "300" in notes[0], _above_figures(at)  # the number typed and the number kept, in view


def test_explorer_says_the_cut_in_chinese():
    at = run(text=LONG, lang="zh")
    notes = [n for n in _above_figures(at) if "128" in n and "300" in n]
    assert notes, _above_figures(at)
    assert re.search(r"[\u4e00-\u9fff]", notes[0]) and not re.search(r"\b(the|first|tokens?|sentence)\b", notes[0]), notes


def test_explorer_says_nothing_about_a_sentence_that_fits():
    at = run(text=" ".join(f"w{i}" for i in range(128)))
    assert not [n for n in _above_figures(at) if "128" in n]
