"""Head-type scores on constructed attention patterns (a pure previous-token head scores (n − 1)/n by
TransformerLens's definition, 1 over the rows with a target), and their agreement with the causal model's own
previous-token score (the rows-with-a-target variant)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_core.analysis.head_types import (CAUSAL_SCORES, detection_pattern, head_type_scores, head_types,
                                                  is_punctuation)
from transformer_core.models.causal import previous_token_score, run_causal


def one_hot_rows(targets: list[int], n: int) -> np.ndarray:
    w = np.zeros((n, n))
    w[np.arange(n), targets] = 1.0
    return w


def test_pure_heads_score_one_on_their_own_type_and_zero_elsewhere():
    n = 6
    tokens = [f"t{i}" for i in range(n)]
    prev = one_hot_rows([0] + list(range(n - 1)), n)  # row 0 has no previous token: itself
    nxt = one_hot_rows(list(range(1, n)) + [n - 1], n)
    same = np.eye(n)
    kinds = ("previous_token", "next_token", "self")
    scores = head_type_scores(np.stack([prev, nxt, same]), tokens, kinds=kinds, definition="rows_with_target")
    np.testing.assert_allclose(scores["previous_token"], [1, 0, 0])
    np.testing.assert_allclose(scores["next_token"], [0, 1, 0])
    np.testing.assert_allclose(scores["self"], [1 / n, 1 / n, 1])  # row 0 / row n-1 sit on themselves
    # TransformerLens's definition (the default) divides by every row: row 0 has no previous token
    scores = head_type_scores(np.stack([prev, nxt, same]), tokens, kinds=kinds)
    np.testing.assert_allclose(scores["previous_token"], [(n - 1) / n, 0, 0])
    np.testing.assert_allclose(scores["next_token"], [0, (n - 1) / n, 0])
    np.testing.assert_allclose(scores["self"], [1 / n, 1 / n, 1])


def test_duplicate_and_induction_on_a_repeated_sequence():
    tokens = ["A", "B", "C", "A", "B", "C"]
    # duplicate head: each repeat looks at its earlier copy; induction head: at the token after it
    dup = one_hot_rows([0, 1, 2, 0, 1, 2], 6)
    ind = one_hot_rows([0, 1, 2, 1, 2, 3], 6)
    scores = head_type_scores(np.stack([dup, ind]), tokens, kinds=("duplicate_token", "induction"),
                              definition="rows_with_target")
    np.testing.assert_allclose(scores["duplicate_token"], [1, 0])
    np.testing.assert_allclose(scores["induction"], [0, 1])
    scores = head_type_scores(np.stack([dup, ind]), tokens, kinds=("duplicate_token", "induction"))
    np.testing.assert_allclose(scores["duplicate_token"], [0.5, 0])  # 3 of 6 rows have a target
    np.testing.assert_allclose(scores["induction"], [0, 0.5])
    # TransformerLens's patterns, written out: induction D[i, j] = [token_{j-1} = token_i, j ≤ i]
    expected = np.zeros((6, 6), bool)
    expected[3, 1] = expected[4, 2] = expected[5, 3] = True
    np.testing.assert_array_equal(detection_pattern("induction", tokens), expected)


def test_shares_and_broadness_on_literal_patterns():
    tokens = ["[CLS]", "the", "cat", ".", "[SEP]"]
    w = np.array([[[0.5, 0.0, 0.0, 0.25, 0.25]] * 5,  # half to [CLS], a quarter each to "." and [SEP]
                  [[0.2] * 5] * 5])  # uniform
    scores = head_type_scores(w, tokens, kinds=("cls_share", "sep_punct_share", "broadness"))
    np.testing.assert_allclose(scores["cls_share"], [0.5, 0.2])
    np.testing.assert_allclose(scores["sep_punct_share"], [0.5, 0.4])
    h = -(0.5 * np.log(0.5) + 2 * 0.25 * np.log(0.25))
    np.testing.assert_allclose(scores["broadness"], [h / np.log(5), 1.0])
    assert is_punctuation("。") and is_punctuation("...") and not is_punctuation("a.") and not is_punctuation("")


def test_broadness_uses_only_visible_keys_and_skips_rows_without_choice():
    causal = np.tril(np.ones((3, 3), bool))
    uniform = causal / causal.sum(-1, keepdims=True)  # row i spreads over its i+1 visible keys
    np.testing.assert_allclose(head_type_scores(uniform[None], ["a", "b", "c"], causal, ("broadness",))["broadness"],
                               [1.0])


def test_a_shifted_head_does_not_pass_as_previous_token():
    """The score can fail: a head two steps back scores 0 as previous-token."""
    two_back = one_hot_rows([0, 1, 0, 1, 2, 3], 6)  # rows 0, 1 on themselves
    assert head_type_scores(two_back[None], list("abcdef"), kinds=("previous_token",))["previous_token"][0] == 0


def test_previous_token_equals_the_causal_models_own_score():
    trace = run_causal([5, 17, 3, 9, 22, 5, 17, 3, 9, 22])
    table = head_types(trace, 0, CAUSAL_SCORES, definition="rows_with_target")
    tl = head_types(trace, 0, CAUSAL_SCORES)
    assert len(table) == 8 and list(table.columns[:2]) == ["layer", "head"]
    for layer in range(2):
        own = previous_token_score(torch.tensor(trace.stage("weights", layer))).numpy()
        np.testing.assert_allclose(table[table.layer == layer]["previous_token"], own, atol=1e-6)
        np.testing.assert_allclose(tl[tl.layer == layer]["previous_token"], own * 9 / 10, atol=1e-6)  # n = 10
    assert table[["previous_token", "duplicate_token", "induction", "self", "broadness"]].to_numpy().max() <= 1 + 1e-9


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown head score"):
        head_type_scores(np.eye(2)[None], ["a", "b"], kinds=("nope",))
