"""Regression (from an attack): "Reopen a downloaded JSON trace" with a file that has the right ``format`` but
inconsistent contents. The uploader promises a note for unreadable files; these pass
``trace_from_json`` and once led to a traceback; now the page shows a note.

AppTest cannot drive ``st.file_uploader``, so it is replaced by a stub returning the file.
"""
from __future__ import annotations

import copy
import io
import json

import pytest
import streamlit as st

from apptest_utils import new_app
from transformer_core import EncoderConfig, run_toy
from transformer_core.records import serialize


def _valid() -> dict:
    trace = run_toy(["the cat sat", "a dog"], EncoderConfig(d_model=16, n_heads=2, d_ff=64), max_tokens=128)
    return json.loads(serialize.trace_to_json(trace))


def _no_stages(doc):
    doc["stages"] = {}


def _no_weights(doc):
    del doc["stages"]["layers.0.attention.weights"]


def _no_tokens(doc):
    doc["tokens"], doc["lengths"], doc["truncated"] = [], [], []


def _more_tokens_than_the_arrays(doc):
    doc["tokens"] = [["a"] * 7, ["b"] * 7]


@pytest.mark.parametrize("corrupt", [_no_stages, _no_weights, _no_tokens, _more_tokens_than_the_arrays])
def test_inconsistent_trace_json_gives_a_note_not_a_traceback(monkeypatch, corrupt):
    doc = copy.deepcopy(_valid())
    corrupt(doc)
    data = json.dumps(doc).encode("utf-8")
    monkeypatch.setattr(st, "file_uploader", lambda *args, **kwargs: io.BytesIO(data))
    at = new_app().run()
    assert not at.exception, at.exception[0].value
