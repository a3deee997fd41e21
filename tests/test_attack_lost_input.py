"""Regression (from an attack): learner input is never dropped without a word."""
from __future__ import annotations

import pytest

from apptest_utils import new_app

NOTE_TYPES = ("info", "warning", "caption", "markdown", "error", "success")


def _notes(at) -> set[str]:
    return {str(el.value) for kind in NOTE_TYPES for el in at.get(kind)}


def test_masks_lab_says_when_it_ignores_sentences():
    two, three = "The cat sat on the mat.\nThe dog chased the cat!", \
        "The cat sat on the mat.\nThe dog chased the cat!\nA third sentence nobody sees"
    at2 = new_app(text=two).run()
    at2.switch_page("pages/masks_lab.py").run()
    at3 = new_app(text=three).run()
    at3.switch_page("pages/masks_lab.py").run()
    assert not at2.exception and not at3.exception
    extra = _notes(at3) - _notes(at2)
    assert extra, "no note that sentence 2 (and later) is not used on this page"
