"""The upload check knows every stage's shape relation and refuses any number that is
not finite (only masked scores may be −inf, exactly where the stored mask blocks), huge numbers, text in the data,
and tokens that skip the text entrance — each with one line naming the stage and the two shapes or the first bad
position. Through :func:`ui.views.read_upload`, the function the explorer's uploader calls (the browser test
``tests/test_upload_browser.py`` sends some of the same files through the real uploader).
"""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from transformer_core import EncoderConfig, run_toy
from transformer_core.analysis.explain import explain_cell
from transformer_core.records import serialize
from ui.explorer.traces import read_upload

STAGES = ("scores", "masked_scores", "weights", "context")
A = "layers.0.attention."
CAUSAL = json.loads(serialize.trace_to_json(run_toy(["the cat sat"], EncoderConfig(d_model=8, n_heads=2, d_ff=16),
                                                                   causal=True)))


def tiny(q_width: int = 2, k_width: int = 2, v_width: int = 2) -> dict:
    """A 2-token, 1-head trace written by hand: every number chosen, no model."""
    def st(shape, value=0.5):
        return {"dtype": "float32", "shape": shape, "data": np.full(shape, value).tolist()}

    return {"format": serialize.FORMAT, "tokens": [["a", "b"]], "lengths": [2], "truncated": [False], "mask": None,
            "settings": {"model": "toy"},
            "stages": {A + "q": st([1, 1, 2, q_width]), A + "k": st([1, 1, 2, k_width]),
                       A + "v": st([1, 1, 2, v_width]), A + "scores": st([1, 1, 2, 2], 0.25),
                       A + "masked_scores": st([1, 1, 2, 2], 0.25), A + "weights": st([1, 1, 2, 2], 0.5),
                       A + "context": st([1, 1, 2, 2])}}


def why(doc: dict | str) -> str | None:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    trace, problem = read_upload(text.encode("utf-8"), STAGES)
    assert (trace is None) != (problem is None)
    if problem is not None:
        assert "\n" not in problem and "Traceback" not in problem and "set_int_max_str_digits" not in problem
    return problem


def test_the_hand_written_trace_is_accepted_and_explained():
    assert why(tiny()) is None
    trace, _ = read_upload(json.dumps(tiny()).encode(), STAGES)
    e = explain_cell(trace, batch=0, head=0, query=1, key=0)
    assert e.score == pytest.approx(0.5 * 0.5 * 2 / np.sqrt(2)) and np.isfinite(e.max_diff)


# ---------------------------------------------------------------- shape relations

def test_q_and_k_of_different_widths_name_both_shapes():
    assert why(tiny(q_width=3, k_width=2)) == ("stage 'layers.0.attention.k' has shape [1, 1, 2, 2] and "
                                               "'layers.0.attention.q' has [1, 1, 2, 3]: queries and keys must "
                                               "share d_head (the last dimension)")


def test_a_wider_v_than_context():
    doc = tiny(v_width=3)
    assert why(doc) == ("stage 'layers.0.attention.context' has shape [1, 1, 2, 2] and 'layers.0.attention.v' has "
                        "[1, 1, 2, 3]: values and context must share d_v (the last dimension)")


def test_concat_must_be_heads_times_d_v():
    doc = copy.deepcopy(CAUSAL)
    doc["stages"][A + "concat"] = {"dtype": "float32", "shape": [1, 3, 6], "data": np.zeros((1, 3, 6)).tolist()}
    assert why(doc) == ("stage 'layers.0.attention.concat' has shape [1, 3, 6] and 'layers.0.attention.context' has "
                        "[1, 2, 3, 4]: concat must be [batch, pos, heads × d_v] = [1, 3, 8]")


def test_output_and_projected_share_d_model():
    doc = copy.deepcopy(CAUSAL)
    doc["stages"][A + "output"] = {"dtype": "float32", "shape": [1, 3, 5], "data": np.zeros((1, 3, 5)).tolist()}
    assert why(doc).startswith("stage 'layers.0.attention.output' has shape [1, 3, 5] and ")
    assert why(doc).endswith("must share d_model (the last dimension)")


def test_weights_rows_must_be_distributions_over_visible_keys():
    doc = tiny()
    doc["stages"][A + "weights"]["data"][0][0][1] = [0.7, 0.7]
    assert why(doc) == ("stage 'layers.0.attention.weights': row [0, 0, 1] sums to 1.4 over its visible keys; "
                        "every row of attention weights is a distribution (sum 1, or all 0 when no key is visible)")
    doc = copy.deepcopy(CAUSAL)
    doc["stages"][A + "weights"]["data"][0][1][0] = [0.5, 0.5, 0.0]  # key 1 is in query 0's future
    assert why(doc) == ("stage 'layers.0.attention.weights' is 0.5 at [0, 1, 0, 1], where the mask blocks the key; "
                        "a blocked key's weight is 0")
    doc = tiny()
    doc["stages"][A + "weights"]["data"][0][0][0] = [1.5, -0.5]
    assert why(doc) == ("stage 'layers.0.attention.weights' is -0.5 at [0, 0, 0, 1]; "
                        "attention weights are never negative")


# ---------------------------------------------------------------- only finite numbers

@pytest.mark.parametrize("literal, shown", [("NaN", "NaN"), ("Infinity", "inf"), ("-Infinity", "-inf"),
                                            ('"nan"', "NaN"), ('"inf"', "inf"), ("1e308", "1e+308"),
                                            ("1e400", "inf"), ("1e39", "1e+39"), ("-3.5e38", "-3.5e+38")])
@pytest.mark.parametrize("stage", ["q", "k", "v", "scores", "context"])
def test_non_finite_or_beyond_float32_numbers_name_the_stage_and_position(literal, shown, stage):
    doc = tiny()
    doc["stages"][A + stage]["data"][0][0][1][0] = "@@"
    text = json.dumps(doc).replace('"@@"', literal)
    problem = why(text)
    assert problem is not None and problem.startswith(f"stage 'layers.0.attention.{stage}' holds {shown} at "
                                                      "[0, 0, 1, 0]"), problem


def test_large_but_float32_numbers_that_would_overflow_the_explanation_are_refused():
    doc = tiny()
    doc["stages"][A + "q"]["data"][0][0][0][0] = 1e30  # q·k overflows float32 in the explain panel
    assert why(doc) == ("stage 'layers.0.attention.q' holds 1e+30 at [0, 0, 0, 0]; numbers in a trace are at most "
                        "1e+15 in size, so every recomputation stays finite")


def test_minus_inf_only_where_the_stored_mask_blocks():
    ours = json.dumps(CAUSAL)
    assert '"-inf"' in ours and why(ours) is None  # the app's own causal trace: −inf above the diagonal
    doc = copy.deepcopy(CAUSAL)
    doc["stages"][A + "masked_scores"]["data"][0][1][2][1] = "-inf"  # query 2 may see key 1
    assert why(doc) == ("stage 'layers.0.attention.masked_scores' holds -inf at [0, 1, 2, 1], where the mask lets "
                        "the query see the key; −inf may stand only where the mask blocks")
    doc = copy.deepcopy(CAUSAL)
    doc["stages"][A + "scores"]["data"][0][0][0][2] = "-inf"  # raw scores: nothing is masked yet
    assert why(doc).startswith("stage 'layers.0.attention.scores' holds -inf at [0, 0, 0, 2]")


@pytest.mark.parametrize("value", ["0.5", "abc", True, None, [0.5]])
def test_text_or_other_values_in_data_are_refused(value):
    doc = tiny()
    doc["stages"][A + "v"]["data"][0][0][1][1] = value
    problem = why(doc)
    assert problem is not None and problem.startswith("stage 'layers.0.attention.v'"), problem


# ---------------------------------------------------------------- huge integers, tokens through the entrance

@pytest.mark.parametrize("where", ["lengths", "data", "settings", "shape"])
def test_a_5000_digit_integer_gives_a_plain_message(where):
    doc = tiny()
    if where == "lengths":
        doc["lengths"] = ["@@"]
    elif where == "data":
        doc["stages"][A + "q"]["data"][0][0][0][0] = "@@"
    elif where == "settings":
        doc["settings"]["seed"] = "@@"
    else:
        doc["stages"][A + "q"]["shape"][3] = "@@"
    problem = why(json.dumps(doc).replace('"@@"', "9" * 5000))
    assert problem is not None and "digits" in problem and len(problem) < 200, problem


def test_uploaded_tokens_pass_the_text_entrance():
    doc = tiny()
    doc["tokens"] = [["a\x00", "e\u0301\x1b[31m"]]
    trace, problem = read_upload(json.dumps(doc).encode(), STAGES)
    assert problem is None and trace.tokens == (("a␀", "é␛[31m"),)
