"""A reopened trace never brings its own value-weighted norms: they are recomputed from a model's W_O, which a
file cannot vouch for. Found by the attack pass: a saved trace with a ``norms`` stage and edited settings
("model": "minilm", no "d_model", a causal "step": -5) crashed ``/?stage=norms`` with a broadcast ValueError or
"no checkpoint at step -5". The stage is dropped on reading; the rest of the file opens as before.
"""
from __future__ import annotations

import json

import pytest

from test_trace_upload import upload
from transformer_core import EncoderConfig, run_toy
from transformer_core.analysis.value_norms import with_norms
from transformer_core.records import serialize

TRACE = with_norms(run_toy(["the cat sat", "a dog"], EncoderConfig(d_model=8, n_heads=2, d_ff=32)))
SAVED = json.loads(serialize.trace_to_json(TRACE))


def test_the_saved_file_really_holds_norms():  # else the tests below would prove nothing
    assert "layers.0.attention.norms" in SAVED["stages"]


def test_reading_drops_the_norms_and_keeps_every_captured_stage():
    trace = serialize.trace_from_json(json.dumps(SAVED))
    assert not any(name.endswith(".attention.norms") for name in trace.stages)
    assert set(trace.stages) == {name for name in TRACE.stages if not name.endswith(".attention.norms")}


@pytest.mark.parametrize("edit", [{"model": "minilm"}, {"d_model": None}, {"model": "causal", "step": -5}],
                         ids=["minilm settings", "no d_model", "causal step -5"])
def test_an_edited_file_with_norms_opens_without_a_traceback(monkeypatch, edit):
    doc = json.loads(json.dumps(SAVED))
    for key, value in edit.items():
        if value is None:
            doc["settings"].pop(key, None)
        else:
            doc["settings"][key] = value
    at = upload(monkeypatch, json.dumps(doc), stage="norms", q=2, k=1, head=1)  # asserts no exception element
    assert not [e for e in at.error]
