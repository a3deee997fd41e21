"""The causal page explains a one-token and a period-1 sequence in words and never shows a
statistic as nan/inf; token ids are ASCII digits only (``²`` is refused with a note, not ``int()``'s message); the
one formatting guard (:mod:`ui.numbers`) used by every page."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from apptest_utils import new_app, without_seed_quotes

from transformer_core.models.causal import parse_tokens
from ui.parts.numbers import finite_table, number

BAD = re.compile(r"\b(nan|inf|infinity)\b|Traceback", re.IGNORECASE)


def visible_text(at) -> str:
    """Every text the page shows (notes, Markdown, captions, LaTeX, metrics, table cells), one string."""
    parts = []
    # not st.code: the masks lab prints Python's own output there as a lesson (float16 −1e9 → -inf)
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "latex", "text", "title", "subheader",
                 "header", "toast", "metric"):
        parts += [str(getattr(e, "value", "")) for e in at.get(kind)]
    for table in at.dataframe:
        frame = table.value
        parts += [str(c) for c in frame.columns]
        numeric = frame.select_dtypes("number")
        assert not np.isinf(numeric.to_numpy(dtype=float)).any(), frame  # NaN is sent as an empty cell
        parts += [str(v) for v in frame.select_dtypes(exclude="number").to_numpy().ravel()]
    return without_seed_quotes("\n".join(parts))


def causal(**query):
    at = new_app(**query)
    at.switch_page("pages/causal.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("mask", ["1", "0"])
def test_one_token_is_explained_and_no_statistic_is_nan(mask):
    at = causal(seq="5", causal_mask=mask)
    text = visible_text(at)
    assert not BAD.search(text), BAD.search(text)
    assert "one token: there is no next token to predict" in text.lower()
    table = at.dataframe[0].value
    assert table["previous-token (this sequence)"].isna().all()  # empty cells: no query has a previous token


@pytest.mark.parametrize("mask", ["1", "0"])
def test_a_period_of_1_is_explained(mask):
    at = causal(seq="5 5 5 5", causal_mask=mask)
    text = visible_text(at)
    assert not BAD.search(text), BAD.search(text)
    assert "a period of 1: every token repeats the one before" in text.lower()


@pytest.mark.parametrize("word", ["²", "١", "５", "1²"])
def test_only_ascii_digits_are_token_ids(word):
    with pytest.raises(ValueError, match="is not a token id"):
        parse_tokens(f"1 {word} 3")
    at = causal(seq=f"1 {word} 3")
    assert any("is not a token id" in w.value for w in at.warning)


def test_a_5000_digit_token_id_is_refused_in_words():
    with pytest.raises(ValueError, match="is not a token id") as err:
        parse_tokens("9" * 5000)
    assert "set_int_max_str_digits" not in str(err.value) and len(str(err.value)) < 200


def test_the_guard_formats_every_kind_of_number():
    assert [number(x) for x in (0.125, float("nan"), None, float("inf"), float("-inf"))] == \
        ["0.12", "—", "—", "+∞", "−∞"]
    assert number(np.float32(0.5), ".0%") == "50%"
    frame = finite_table(pd.DataFrame({"a": [1.0, np.inf, -np.inf], "b": ["x", "y", "z"]}))
    assert frame["a"].tolist()[0] == 1.0 and frame["a"].isna().tolist() == [False, True, True]
