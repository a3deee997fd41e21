"""The uploader "Reopen a downloaded JSON trace" turns every inconsistent, hostile or oversized
file into one plain-text note (never a traceback, never Markdown), and a good file still opens.

AppTest cannot drive ``st.file_uploader``, so it is replaced by a stub returning the file.
"""
from __future__ import annotations

import copy
import io
import json
import re

import numpy as np
import streamlit as st

from apptest_utils import new_app
from transformer_core import EncoderConfig, run_toy
from transformer_core.records import serialize
from ui.shell.markdown import WORD_JOINER

ONE = json.loads(serialize.trace_to_json(run_toy(["the cat sat"], EncoderConfig(d_model=8, n_heads=2, d_ff=32))))
TWO = json.loads(serialize.trace_to_json(run_toy(["the cat sat", "a dog"], EncoderConfig(d_model=8, n_heads=2,
                                                                                          d_ff=32))))
WEIGHTS = "layers.0.attention.weights"


def shown(markdown: str) -> str:
    """What a note made with ``ui.markdown.plain`` reads as on the page (escapes and word joiners removed)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown).replace(WORD_JOINER, "")


def upload(monkeypatch, data: bytes | str, **query):
    """Run the explorer with ``data`` in the trace uploader; no exception element allowed."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    monkeypatch.setattr(st, "file_uploader", lambda *args, **kwargs: io.BytesIO(raw))
    at = new_app(**{"tables": "1", **query}).run()  # the box with the token table open (?tables=1)
    assert not at.exception, [e.message for e in at.exception]
    return at


def token_table(at):
    """The explorer's token table (the page shows other tables too)."""
    tables = [d.value for d in at.dataframe if list(d.value.index[:1]) == ["sentence 0"]]
    assert len(tables) == 1
    return tables[0]


def refusal(at) -> str:
    """The one "cannot be shown" note, as the learner reads it; the sidebar's own trace is shown instead."""
    notes = [shown(w.value) for w in at.warning if "cannot be shown" in w.value]
    assert len(notes) == 1, [w.value for w in at.warning]
    table = token_table(at)
    assert not table.isna().any().any()  # the token table of the sidebar's sentences: no NaN cell
    assert list(table.iloc[0][:3]) == ["The", "cat", "sat"]
    return notes[0]


def doc_with(base: dict, **changes) -> str:
    doc = copy.deepcopy(base)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = doc
        for key in parents:
            node = node[key]
        node[last] = value
    return json.dumps(doc)


def stage(shape: list[int]) -> dict:
    return {"dtype": "float32", "shape": shape, "data": np.zeros(shape).tolist()}


# ---------------------------------------------------------------- one note per kind of bad file

def test_weights_whose_key_dimension_does_not_match_the_tokens(monkeypatch):
    doc = copy.deepcopy(ONE)
    doc["stages"][WEIGHTS] = stage([1, 2, 3, 5])
    note = refusal(upload(monkeypatch, json.dumps(doc)))
    assert note == ("That file cannot be shown: stage 'layers.0.attention.weights' has shape [1, 2, 3, 5]; "
                    "for 1×3 tokens it must be [1, heads, 3, 3]")


def test_token_rows_of_different_lengths(monkeypatch):
    note = refusal(upload(monkeypatch, doc_with(TWO, tokens=[["the", "cat", "sat"], ["a", "dog", "[PAD]", "x"]])))
    assert note == ("That file cannot be shown: sentence 1 has 4 tokens and sentence 0 has 3: every sentence of "
                    "a trace is padded to the same length")


def test_a_mask_with_one_sentence_for_two(monkeypatch):
    note = refusal(upload(monkeypatch, doc_with(TWO, mask=TWO["mask"][:1])))
    assert note == ("That file cannot be shown: 'mask' has shape [1, 1, 3, 3]; for 2×3 tokens it must be "
                    "[2, 1, 3, 3] (or [2, 1, 1, 3]: key columns only)")


def test_a_mask_with_two_query_rows_for_three_tokens(monkeypatch):
    note = refusal(upload(monkeypatch, doc_with(ONE, mask=[[ONE["mask"][0][0][:2]]])))
    assert note == ("That file cannot be shown: 'mask' has shape [1, 1, 2, 3]; for 1×3 tokens it must be "
                    "[1, 1, 3, 3] (or [1, 1, 1, 3]: key columns only)")


def test_a_mask_of_numbers_is_refused(monkeypatch):
    note = refusal(upload(monkeypatch, doc_with(ONE, mask=[[[[1, 0, 1]] * 3]])))
    assert note == "That file cannot be shown: 'mask' must hold only true and false"


def test_a_lone_surrogate_token(monkeypatch):
    text = doc_with(ONE, tokens=[["the", "\ud800", "sat"]])  # json.dumps writes it as the escape \ud800
    assert "\\ud800" in text
    note = refusal(upload(monkeypatch, text))
    assert note == ("That file cannot be shown: token 1 of sentence 0 is not valid Unicode (it holds a lone "
                    "surrogate such as \\ud800)")


def test_json_nested_100000_levels(monkeypatch):
    note = refusal(upload(monkeypatch, "[" * 100_000 + "]" * 100_000))
    assert note == "That file cannot be shown: not a trace: it is nested far too deeply (a trace is 7 levels deep)"


def test_five_dimensional_weights(monkeypatch):
    doc = copy.deepcopy(ONE)
    doc["stages"][WEIGHTS] = stage([1, 2, 3, 3, 1])
    note = refusal(upload(monkeypatch, json.dumps(doc)))
    assert note == ("That file cannot be shown: stage 'layers.0.attention.weights' has 5 dimensions; a stage has 3 "
                    "[batch, pos, features] or 4 [batch, head, pos, ·]")


def test_data_that_does_not_match_its_shape(monkeypatch):
    doc = copy.deepcopy(ONE)
    doc["stages"][WEIGHTS]["data"][0][0] = doc["stages"][WEIGHTS]["data"][0][0][:2]  # ragged
    note = refusal(upload(monkeypatch, json.dumps(doc)))
    assert note == ("That file cannot be shown: stage 'layers.0.attention.weights': its data is not an array of "
                    "numbers of shape [1, 2, 3, 3]")


def test_256_heads_are_refused_like_typed_text(monkeypatch):
    wide = serialize.trace_to_json(run_toy(["the cat sat"], EncoderConfig(d_model=256, n_heads=256, d_ff=8)))
    note = refusal(upload(monkeypatch, wide))
    assert note == ("That file cannot be shown: stage 'layers.0.attention.q' has 256 heads; at most 16 can be shown")


def test_400_tokens_are_refused_like_typed_text(monkeypatch):
    long = serialize.trace_to_json(run_toy([" ".join(["w"] * 400)], EncoderConfig(d_model=4, n_heads=1, d_ff=4),
                                           max_tokens=400))
    note = refusal(upload(monkeypatch, long))
    assert note == "That file cannot be shown: its sentences have 400 tokens; from 1 to 128 can be shown"


def test_a_file_that_is_not_utf8(monkeypatch):
    note = refusal(upload(monkeypatch, b'{"format": "\xff"}'))
    assert note == "That file cannot be shown: it is not UTF-8 text (byte 12 cannot be read)"


# ---------------------------------------------------------------- nothing from a file is Markdown

def test_markdown_in_settings_max_tokens_is_never_rendered(monkeypatch):
    """The "were cut" note once quoted ``settings.max_tokens``; now the file's settings must be a whole number
    there, and the note counts the tokens itself."""
    hostile = "[Log in](https://evil.example) ![i](http://127.0.0.1:9/p.png) **x**"
    note = refusal(upload(monkeypatch, doc_with(ONE, settings__max_tokens=hostile)))
    assert note == "That file cannot be shown: setting 'max_tokens' must be a whole number ≥ 0"
    at = upload(monkeypatch, doc_with(ONE, truncated=[True]))  # a good file whose sentence was cut
    cut = [i.value for i in at.info if "cut" in i.value]
    assert cut == ["Sentence 0 was cut to 3 tokens."]


def test_a_format_value_with_a_link_is_quoted_as_plain_text(monkeypatch):
    at = upload(monkeypatch, json.dumps({"format": "see http://evil.example/login"}))
    raw = next(w.value for w in at.warning if "cannot be shown" in w.value)
    assert "http://" not in raw and "http\\:" + WORD_JOINER + "//evil\\.example" in raw  # no autolink can start
    assert shown(raw) == ("That file cannot be shown: not a trace document: expected format "
                          "'attention-explorer-trace/1', found 'see http://evil.example/login'")


# ---------------------------------------------------------------- a good file still opens

def test_a_good_file_opens_with_its_own_tokens(monkeypatch):
    at = upload(monkeypatch, json.dumps(TWO))
    assert not [w.value for w in at.warning if "cannot be shown" in w.value]
    assert any("Showing the uploaded trace" in i.value for i in at.info)
    # above the figures too (the box is below them): the sidebar's sentences and masks do not apply now
    assert at.main.info[0].value.startswith("Showing an uploaded trace: its own sentences, masks and sizes")
    table = token_table(at)
    assert table.values.tolist() == [["the", "cat", "sat"], ["a", "dog", "[PAD]"]]


def test_two_sentences_cut_are_named_in_plain_english(monkeypatch):
    doc = copy.deepcopy(TWO)
    doc["truncated"] = [True, True]
    at = upload(monkeypatch, json.dumps(doc))
    assert [i.value for i in at.info if "cut" in i.value] == ["Sentences 0 and 1 were cut to 2 and 3 tokens."]


def test_a_file_without_q_k_v_offers_only_its_own_stages(monkeypatch):
    """A file needs only scores, masked scores, weights and context: Q, K and V are not offered (picking one
    raised KeyError), and a link asking for one falls back to the weights with a note."""
    doc = copy.deepcopy(ONE)
    doc["stages"] = {k: v for k, v in doc["stages"].items() if k.rsplit(".", 1)[-1] not in ("q", "k", "v")}
    at = upload(monkeypatch, json.dumps(doc), stage="q")
    assert any("Showing the uploaded trace" in i.value for i in at.info)
    assert at.segmented_control(key="explorer_stage").options == ["scores", "masked", "weights", "context"]
    assert at.segmented_control(key="explorer_stage").value == "weights"
    assert any("stage=q" in w.value for w in at.warning)


def test_a_file_without_a_format_field_says_it_is_missing(monkeypatch):
    for text in ("{}", '{"format": null}'):
        assert refusal(upload(monkeypatch, text)) == ("That file cannot be shown: not a trace document: its 'format' "
                                                      "field is missing (expected 'attention-explorer-trace/1')")
