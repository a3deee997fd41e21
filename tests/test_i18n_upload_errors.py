"""An uploaded trace's refusal reads in the page's language. Each case below breaks a hand-written
trace in one way (a type, a shape, a relation, a number); the English line is the schema's own, and the Chinese
line holds Chinese and no English sentence (stage names, shapes and quoted values stay as they are)."""
from __future__ import annotations

import copy
import json
import re

import pytest
from test_i18n_pages import HAN, english_sentences
from test_upload_schema_relations import A, STAGES, tiny

from transformer_core.text.i18n import use_language
from ui.explorer.traces import read_upload


def _set(path, value):
    def change(doc):
        *parents, last = path
        node = doc
        for key in parents:
            node = node[key]
        node[last] = value
    return change


def _data(stage, value):
    return _set(("stages", A + stage, "data", 0, 0, 0), [value, 0.5])


CASES = {
    "not an object": lambda doc: doc.clear() or doc.update({"format": doc.get("format")}),
    "lengths of a list": _set(("lengths",), [1, 1]),
    "a length of text": _set(("lengths", 0), "two"),
    "a length of inf": _set(("lengths", 0), 10**30),
    "truncated of text": _set(("truncated", 0), "no"),
    "a token of a number": _set(("tokens", 0, 0), 5),
    "a ragged sentence": _set(("tokens",), [["a", "b"], ["c"]]),
    "a mask of numbers": _set(("mask",), [[[[1, 0], [1, 1]]]]),
    "a mask of the wrong shape": _set(("mask",), [[[[True, True, True]]]]),
    "settings of a list": _set(("settings",), []),
    "a bool setting of text": _set(("settings", "causal"), "yes"),
    "a negative d_model": _set(("settings", "d_model"), -1),
    "stages of a list": _set(("stages",), []),
    "a stage name with spaces": lambda doc: doc["stages"].update({"bad name": doc["stages"][A + "q"]}),
    "a stage without data": _set(("stages", A + "q"), {"shape": [1, 1, 2, 2]}),
    "a float64 stage": _set(("stages", A + "q", "dtype"), "float64"),
    "five dimensions": _set(("stages", A + "q", "shape"), [1, 1, 2, 2, 1]),
    "two sentences in a stage": _set(("stages", A + "q", "shape"), [2, 1, 2, 2]),
    "three heads in one stage": _set(("stages", A + "scores", "shape"), [1, 3, 2, 2]),
    "a stage of the wrong length": _set(("stages", A + "q", "shape"), [1, 1, 3, 2]),
    "data of another shape": _set(("stages", A + "q", "data"), [[[[0.5, 0.5]]]]),
    "text in the data": _data("q", "x"),
    "nan in the data": _data("q", "nan"),
    "1e20 in the data": _data("q", 1e20),
    "a negative weight": _set(("stages", A + "weights", "data"), [[[[-0.5, 1.5], [0.5, 0.5]]]]),
    "a row that sums to 0.6": _set(("stages", A + "weights", "data"), [[[[0.3, 0.3], [0.5, 0.5]]]]),
    "no weights": lambda doc: doc["stages"].pop(A + "weights"),
}


def refusal(change, language: str) -> str:
    doc = copy.deepcopy(tiny())
    change(doc)
    with use_language(language):
        trace, problem = read_upload(json.dumps(doc).encode("utf-8"), STAGES)
    assert trace is None, "the broken trace was accepted"
    return problem


@pytest.mark.parametrize("case", list(CASES))
def test_a_refusal_reads_in_chinese(case):
    english, chinese = refusal(CASES[case], "en"), refusal(CASES[case], "zh")
    assert HAN.search(chinese), chinese
    names = re.sub(r"'[^']*'|\[[^\]]*\]", " ", chinese)  # quoted names and shape legends stay as written
    assert not english_sentences(names), (english_sentences(names), chinese)
    assert not HAN.search(english), english


def test_the_cases_hit_different_messages():
    lines = {refusal(change, "en") for change in CASES.values()}
    assert len(lines) == len(CASES), sorted(lines)
