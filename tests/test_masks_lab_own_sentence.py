"""The masks lab's sentence picker starts again on the learner's own sentence when what its choices mean changes:
two typed sentences with the second picked, then one typed sentence (index 1 is now the lab's added example)."""
from __future__ import annotations

import pytest

from apptest_utils import figures, new_app

PAGE = "pages/masks_lab.py"


def lab_rows(at) -> list[list[str]]:
    frame = at.dataframe[0].value
    return [[t for t in row if t and t != "[PAD]"] for row in frame.values.tolist()]


@pytest.mark.parametrize("lang, two, one", [
    ("en", "the cat sat\nthe dog ran after the ball", "my own sentence"),
    ("zh", "我们 学习\n老师 讲 注意力 机制", "我们 今天 学习 注意力"),
])
def test_the_picker_goes_back_to_the_learners_sentence_when_the_batch_changes(lang, two, one):
    at = new_app(text=two, lang=lang)
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    at.selectbox(key="masks_batch").set_value(1).run()
    assert lab_rows(at)[1] == two.splitlines()[1].split()
    at.sidebar.text_area(key="shared_text").set_value(one).run()
    assert not at.exception, at.exception
    picker = at.selectbox(key="masks_batch")
    assert picker.value == 0, picker.options  # was 1: the lab's added example
    assert lab_rows(at)[0] == one.split()
    assert picker.options[0].startswith("0: " + one.split()[0])
    # every figure is of the learner's sentence: its first row is the learner's first token
    rows = [f["layout"]["yaxis"]["ticktext"][0] for f in figures(at)]
    assert rows and all(r == "0: " + one.split()[0] for r in rows), rows


def test_a_picked_added_example_stays_picked_while_the_batch_keeps_its_meaning():
    at = new_app(text="my own sentence")
    at.switch_page(PAGE).run()
    at.selectbox(key="masks_batch").set_value(1).run()
    at.sidebar.text_area(key="shared_text").set_value("my own longer sentence").run()
    assert at.selectbox(key="masks_batch").value == 1  # still the added example: its meaning did not change
