"""Labels show no escape characters, cut sentences at a word boundary
with "…", and say counts in plain English; a backslash token stays visible. Plus the text helpers."""
from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apptest_utils import charts, new_app
from test_trace_upload import shown
from ui.parts.labels import and_list, cut, numbered, plural, sentence_label
from ui.shell.markdown import WORD_JOINER, plain

LONG = "The road was very muddy after the heavy rain last night"
ESCAPES = re.compile(r"\\[!-/:-@\[-`{-~]")  # a backslash before punctuation: Markdown escaping shown as text


# ---------------------------------------------------------------- helpers

def test_cut_at_word_boundaries_with_an_ellipsis():
    assert cut(LONG, 40) == "The road was very muddy after the heavy…"
    assert cut(LONG, 30) == "The road was very muddy after…"
    assert cut("short one", 40) == "short one"
    assert cut("  many   spaces\nand a line  ", 40) == "many spaces and a line"
    assert cut("猫が座った" * 10, 12) == "猫が座った猫が座った猫…"  # no spaces: cut inside, still ≤ width
    assert cut("e\u0301" * 30, 10) == "e\u0301" * 4 + "…"  # never between a letter and its accent
    assert cut("👩‍👩‍👧" * 10, 4) == "👩‍👩‍👧…"  # never inside an emoji sequence
    assert len(cut(LONG, 40)) <= 40


@given(st.text(max_size=80), st.integers(2, 60))
def test_cut_never_exceeds_its_width_and_keeps_a_prefix(text, width):
    out = cut(text, width)
    flat = " ".join(text.split())
    if len(flat) <= width:
        assert out == flat
    else:
        assert out.endswith("…") and flat.startswith(out[:-1])


def test_plain_english_counts():
    assert (plural(1, "token"), plural(3, "token")) == ("1 token", "3 tokens")
    assert plural(1, "[PAD] token") == "1 [PAD] token"
    assert (and_list([0]), and_list([0, 2]), and_list([0, 1, 2])) == ("0", "0 and 2", "0, 1 and 2")
    assert (numbered("sentence", [1]), numbered("Sentence", [0, 2])) == ("sentence 1", "Sentences 0 and 2")
    assert sentence_label(1, LONG) == "1: The road was very muddy after the heavy…"


@given(st.text(max_size=60).filter(lambda t: WORD_JOINER not in t))
def test_plain_reads_as_the_text_and_starts_no_link_or_icon(text):
    md = plain(text)
    assert shown(md) == " ".join(text.splitlines())
    assert "\n" not in md and "\r" not in md
    bare = md.replace(WORD_JOINER, "\x00")
    # every pattern Streamlit's Markdown turns into a link or an icon is broken by a word joiner
    assert not re.search(r"(?i)https?\\?:/|www\\\.|\\?:material|[\w.+-]\\?@", bare)


# ---------------------------------------------------------------- pages

def test_masks_lab_backslash_token_and_row_labels():
    at = new_app(text="\\ x\nq r s t u")
    at.switch_page("pages/masks_lab.py").run()
    at.session_state["section"] = "Two conventions"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.selectbox(key="masks_batch").options == ["0: \\ x", "1: q r s t u"]
    assert at.selectbox(key="masks_empty_row").options[:2] == ["0: \\", "1: x"]
    row = [m.value for m in at.markdown if m.value.startswith("**Row 0")]
    assert len(row) == 1 and shown(row[0]).startswith("**Row 0 (\\), no visible key**")
    for box in at.selectbox:
        assert not any(ESCAPES.search(o) for o in box.options), box.options


def test_pipeline_picker_is_plain_text_cut_at_a_word():
    at = new_app(text=f"{LONG}\n:material/delete: now\nsee http://evil.example")
    at.switch_page("pages/pipeline.py").run()
    assert not at.exception
    assert at.selectbox(key="pipeline_batch").options == [
        "0: The road was very muddy after the heavy…", "1: :material/delete: now", "2: see http://evil.example"]
    assert not at.main.radio  # no Markdown-rendering picker left on the page


def test_pipeline_side_by_side_titles_say_head_and_heads():
    at = new_app(text="the cat sat")
    at.switch_page("pages/pipeline.py").run()
    at.session_state["step"] = "A vs B"
    at.run()
    assert not at.exception
    titles = [json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "") for c in charts(at)]
    assert any("(1 head, causal off)" in t for t in titles), titles
    assert any("(8 heads, causal off)" in t for t in titles), titles
    assert not any("(s)" in t for t in titles)


def test_explorer_picker_and_cut_note():
    text = " ".join(f"w{i}" for i in range(130)) + "\n" + LONG
    at = new_app(text=text).run()
    assert not at.exception
    assert at.selectbox(key="explorer_batch").options == ["0: w0 w1 w2 w3 w4 w5 w6 w7 w8 w9…",
                                                          "1: The road was very muddy after…"]
    # above the figures, whether or not the box of tokens is open; the box's own note when it is open
    top = "Sentence 0 has 130 tokens: only its first 128 are shown (at most 128 tokens a sentence)."
    assert [i.value for i in at.info if "tokens" in i.value] == [top]
    at = new_app(text=text, tables="1").run()
    assert [i.value for i in at.info if "tokens" in i.value] == [top, "Sentence 0 was cut to 128 tokens."]


def test_minilm_picker_and_padding_notes():
    at = new_app(text="the quick brown fox jumps over the lazy dog near the river bank today\nhi there")
    at.switch_page("pages/minilm.py").run()
    assert not at.exception
    assert at.selectbox(key="minilm_batch").options == [
        "0: the quick brown fox jumps over the lazy dog near the river…", "1: hi there"]
    captions = " ".join(c.value for c in at.caption)
    assert ("Sentence 0 is the longest and has no [PAD]; sentence 1 is padded — pick it to see what the "
            "padding mask does.") in captions
    at.selectbox(key="minilm_batch").set_value(1).run()
    captions = " ".join(c.value for c in at.caption)
    assert "Sentence 1 ends with 12 [PAD] tokens." in captions, captions
    assert "(s)" not in captions


@pytest.mark.parametrize("query, quoted", [
    ({"seed": "www.evil.example"}, "URL parameter seed=www.evil.example ignored (not a whole number); using 0."),
    ({"n_heads": "see http://evil.example/login"},
     "URL parameter n_heads=see http://evil.example/login ignored (must divide d_model=64: one of [1, 2, 4, 8, 16]); "
     "using 8."),
    ({"stage": ":material/delete:"}, "URL parameter stage=:material/delete: ignored (choose one of"),
])
def test_url_notes_quote_the_link_as_inert_text(query, quoted):
    at = new_app(**query).run()
    assert not at.exception
    notes = [w.value for w in at.warning if "URL parameter" in w.value]
    assert len(notes) == 1 and shown(notes[0]).startswith(quoted), notes
    assert not re.search(r"https?\\?:/|www\\\.|\\?:material", notes[0].replace(WORD_JOINER, "\x00"))


def test_spans_writes_runs_as_ranges():
    from ui.parts.labels import spans

    assert spans([0, 1, 2, 3, 7]) == "0–3 and 7" and spans([5]) == "5" and spans([]) == ""
    assert spans([9, 2, 3, 11, 10]) == "2–3 and 9–11" and spans([1, 3, 5]) == "1, 3 and 5"
