"""Bidirectional controls (U+202A–202E, U+2066–2069, U+200E/200F, U+061C) are shown as marks at the one text
entrance, like the other control characters: in tokens, token labels, the page's text and notes, and every
export. A right-to-left override typed into a sentence used to mirror the text after it, the app's own numbers
included ("0.2293" drawn as "3922.0")."""
from __future__ import annotations

import json
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from apptest_utils import new_app
from transformer_core import EncoderConfig, run_toy
from transformer_core.cli import export
from transformer_core.text.byte_bpe import byte_table, token_labels
from transformer_core.text.tokenize import BIDI_MARKS, normalize_text, visible_bidi, word_tokenize

EXPLICIT = {"LRE", "RLE", "PDF", "LRO", "RLO", "LRI", "RLI", "FSI", "PDI"}  # UAX #9's explicit formatting classes
MARKS = {"\u200e", "\u200f", "\u061c"}  # LRM, RLM, ALM
BIDI = {chr(c) for c in range(0x110000) if unicodedata.bidirectional(chr(c)) in EXPLICIT} | MARKS
TEXT = "left \u202eright side text\nsecond \u2067line\u2069 \u200fend"


def test_every_bidi_control_has_a_mark():
    assert BIDI == set(BIDI_MARKS) and len(BIDI) == 12
    assert normalize_text("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c") == (
        "⟨LRE⟩⟨RLE⟩⟨PDF⟩⟨LRO⟩⟨RLO⟩⟨LRI⟩⟨RLI⟩⟨FSI⟩⟨PDI⟩⟨LRM⟩⟨RLM⟩⟨ALM⟩")
    assert normalize_text(TEXT) == "left ⟨RLO⟩right side text\nsecond ⟨RLI⟩line⟨PDI⟩ ⟨RLM⟩end"
    assert visible_bidi(TEXT + "\u202e") == ["⟨RLO⟩", "⟨RLI⟩", "⟨PDI⟩", "⟨RLM⟩"]
    assert word_tokenize("a\u202eb") == ["a", "⟨", "RLO", "⟩", "b"]


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters() | st.sampled_from(sorted(BIDI)), max_size=40))
def test_property_no_bidi_control_passes_the_entrance(s):
    once = normalize_text(s)
    assert not BIDI & set(once) and normalize_text(once) == once


def test_a_generated_tokens_label_shows_the_mark():
    table = byte_table()
    token = "".join(table[b] for b in "x\u202ey".encode())
    assert token_labels([token]) == ["x⟨RLO⟩y"]


def test_the_text_box_says_so():
    from ui.shell.controls import split_sentences

    sentences, notes = split_sentences(TEXT)
    assert sentences == ("left ⟨RLO⟩right side text", "second ⟨RLI⟩line⟨PDI⟩ ⟨RLM⟩end")
    assert notes == ["Direction controls in the text are shown as ⟨RLO⟩ ⟨RLI⟩ ⟨PDI⟩ ⟨RLM⟩: they would reverse the "
                     "text after them, the page's own numbers included."]


def test_explorer_link_with_a_right_to_left_override():
    at = new_app(text="left \u202eright side text\nsecond line", q="1", k="1").run()
    assert not at.exception
    shown = "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "warning") for e in getattr(at, kind))
    assert not BIDI & set(shown)
    assert "⟨RLO⟩" in shown and "Direction controls in the text are shown as ⟨RLO⟩" in shown
    assert "score" in shown and "weight" in shown
    at = new_app(text="left \u202eright side text", lang="zh").run()
    shown = "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "warning") for e in getattr(at, kind))
    assert not BIDI & set(shown) and "方向控制符" in shown


def test_exports_carry_the_marks(tmp_path):
    trace = run_toy([TEXT.replace("\n", " ")], EncoderConfig(d_model=16, n_heads=4, d_ff=32, seed=0))
    assert "⟨" in trace.tokens[0] and "RLO" in trace.tokens[0]
    csv = export.export(trace, fmt="csv", head=0, out=tmp_path / "m.csv").read_text("utf-8")
    page = export.export(trace, fmt="html", head=0, out=tmp_path / "h.html").read_text("utf-8")
    data = export.export(trace, fmt="json", out=tmp_path / "t.json").read_text("utf-8")
    for text in (csv, page, data):
        assert not BIDI & set(text) and "RLO" in text
    assert json.loads(data)["tokens"][0][1:4] == ["⟨", "RLO", "⟩"]
    assert export.split_text([TEXT]) == ["left ⟨RLO⟩right side text", "second ⟨RLI⟩line⟨PDI⟩ ⟨RLM⟩end"]
