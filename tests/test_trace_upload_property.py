"""Trace upload, property: random mutations of a valid trace JSON (shapes, types, strings, nesting) never make the
upload path raise, and a trace it accepts never puts NaN into a table or breaks the explorer's figures.

The upload path is :func:`ui.views.read_upload` (the explorer's uploader hands it the file's bytes; it
returns a trace or the reason for its one note); a trace it accepts then feeds the token table
(:func:`ui.views.token_frame`), the CSV table and every figure the explorer draws of it.
"""
from __future__ import annotations

import copy
import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transformer_core import EncoderConfig, run_toy
from transformer_core.figures import stage as figures
from transformer_core.records import serialize
from ui.explorer.traces import read_upload
from ui.parts.trace_tables import token_frame

STAGES = ("scores", "masked_scores", "weights", "context")  # what the explorer requires and draws
VALID = json.loads(serialize.trace_to_json(run_toy(["the cat sat", "a dog"], EncoderConfig(d_model=8, n_heads=2,
                                                                                            d_ff=16))))

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 4), st.integers(-2**70, 2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["-inf", "inf", "nan", "[PAD]", "\ud800", ""]),
    st.text(max_size=6))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=12)


def _containers(node, path=()):
    """Every (path, container) inside the document."""
    if isinstance(node, (dict, list)):
        yield path, node
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            yield from _containers(child, path + (key,))


@st.composite
def mutated(draw) -> str:
    doc = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 3))):
        spots = list(_containers(doc))
        _, node = spots[draw(st.integers(0, len(spots) - 1))]
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        action = draw(st.sampled_from(["replace", "delete", "grow", "shrink", "wrap", "shape"]))
        if not keys:
            continue
        key = draw(st.sampled_from(keys))
        if action == "replace":
            node[key] = draw(values)
        elif action == "delete":
            del node[key]
        elif action == "grow" and isinstance(node, list):
            node.append(copy.deepcopy(node[key]))
        elif action == "shrink" and isinstance(node[key], list):
            node[key] = node[key][:-1]
        elif action == "wrap":
            node[key] = [node[key]] * draw(st.integers(1, 2))
        elif action == "shape" and isinstance(node, dict) and isinstance(node.get("shape"), list) and node["shape"]:
            shape = node["shape"]
            shape[draw(st.integers(0, len(shape) - 1))] = draw(st.integers(-1, 300))
    text = json.dumps(doc)  # ASCII: a lone surrogate is written as its \ud800 escape, NaN as the literal NaN
    cut = draw(st.sampled_from(["none", "none", "truncate", "nest", "bom"]))
    if cut == "truncate":
        text = text[:draw(st.integers(0, len(text)))]
    elif cut == "nest":
        depth = draw(st.sampled_from([10, 3000]))
        text = "[" * depth + text + "]" * depth
    elif cut == "bom":
        text = "\ufeff" + text
    return text


def _draw_everything(trace) -> None:
    """What the explorer and its downloads compute from an accepted trace (any exception fails the test)."""
    frame = token_frame(trace)
    assert not frame.isna().any().any(), frame
    assert trace.n_heads >= 1 and len({len(t) for t in trace.tokens}) == 1
    for b in range(len(trace.tokens)):
        assert trace.visible(b).shape == (len(trace.tokens[b]),) * 2
        for stage in STAGES:
            zrange = figures.stage_range(trace, stage, b)
            assert all(np.isfinite(zrange)), (stage, zrange)
            figures.stage_figure(trace, stage, batch=b, head=trace.n_heads - 1, zrange=zrange)
            table = serialize.matrix_frame(trace, stage, b, head=0)
            assert table.shape[0] == len(trace.tokens[b])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_no_exception_escapes_the_upload_path_and_no_nan_reaches_a_table(text):
    trace, why = read_upload(text.encode("utf-8", "surrogatepass"), STAGES)
    assert (trace is None) != (why is None)
    if trace is None:
        assert isinstance(why, str) and why.strip() and "\n" not in why and len(why) < 400
    else:
        _draw_everything(trace)


def test_the_unmutated_file_is_accepted_and_drawn():
    trace, why = read_upload(json.dumps(VALID).encode("utf-8"), STAGES)
    assert why is None and trace.tokens == (("the", "cat", "sat"), ("a", "dog", "[PAD]"))
    _draw_everything(trace)
