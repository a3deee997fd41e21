"""Per-head statistics on literal weight matrices (no model needed)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from transformer_core.analysis.head_stats import COLUMNS, head_stats, pattern_stats, row_stats, special_keys
from transformer_core.records.trace import Trace

TOKENS = ("[CLS]", "the", "cat", "[SEP]")


def trace_of(*layers, tokens=(TOKENS,), lengths=None) -> Trace:
    """A Trace holding only ``weights`` ``[batch, head, query_pos, key_pos]`` per layer."""
    stages = {f"layers.{i}.attention.weights": np.asarray(w, dtype=np.float32) for i, w in enumerate(layers)}
    lengths = tuple(len(t) for t in tokens) if lengths is None else lengths
    return Trace(tokens=tuple(tokens), lengths=lengths, truncated=(False,) * len(tokens), mask=None, stages=stages)


def test_uniform_weights_have_entropy_ln_n():
    n = 4
    stats = pattern_stats(np.full((1, n, n), 1 / n), TOKENS)
    assert stats["entropy"][0] == pytest.approx(math.log(n))
    assert stats["max_weight"][0] == pytest.approx(0.25)
    # mean over rows of Σ_j |i−j| / 4: rows 0..3 give 6, 4, 4, 6 → 20 / 16
    assert stats["mean_distance"][0] == pytest.approx(20 / 16)
    assert stats["cls_share"][0] == pytest.approx(0.25) and stats["sep_share"][0] == pytest.approx(0.25)
    assert stats["pad_share"][0] == 0


def test_identity_weights_have_entropy_zero_and_distance_zero():
    stats = pattern_stats(np.eye(4)[None], TOKENS)
    assert stats["entropy"][0] == 0 and stats["mean_distance"][0] == 0
    assert stats["max_weight"][0] == 1
    assert stats["cls_share"][0] == pytest.approx(0.25)  # only the [CLS] query looks at [CLS]


def test_all_attention_on_cls_gives_cls_share_one():
    w = np.zeros((1, 4, 4))
    w[0, :, 0] = 1.0
    stats = pattern_stats(w, TOKENS)
    assert stats["cls_share"][0] == 1 and stats["sep_share"][0] == 0
    assert stats["entropy"][0] == 0
    assert stats["mean_distance"][0] == pytest.approx((0 + 1 + 2 + 3) / 4)


def test_previous_token_head_has_distance_one():
    w = np.eye(4, k=-1)
    w[0, 0] = 1.0  # the first query has no previous token: itself
    stats = pattern_stats(w[None], TOKENS)
    assert stats["mean_distance"][0] == pytest.approx(3 / 4)
    assert stats["entropy"][0] == 0


def test_heads_are_computed_separately():
    w = np.stack([np.full((4, 4), 0.25), np.eye(4)])
    stats = pattern_stats(w, TOKENS)
    np.testing.assert_allclose(stats["entropy"], [math.log(4), 0.0], atol=1e-12)


def test_only_real_query_rows_are_averaged():
    tokens = ("[CLS]", "hi", "[SEP]", "[PAD]")
    w = np.zeros((1, 4, 4))
    w[0, :3, :3] = np.eye(3)  # real queries: one key each
    w[0, 3] = 0.25  # the [PAD] query row: uniform (must be ignored)
    stats = pattern_stats(w, tokens, n_real=3)
    assert stats["entropy"][0] == 0 and stats["pad_share"][0] == 0
    assert pattern_stats(w, tokens)["entropy"][0] == pytest.approx(math.log(4) / 4)


def test_pad_share_counts_attention_to_pad_keys():
    tokens = ("[CLS]", "hi", "[SEP]", "[PAD]", "[PAD]")
    w = np.full((1, 5, 5), 0.2)  # no padding mask: the [PAD] keys get weight
    assert pattern_stats(w, tokens, n_real=3)["pad_share"][0] == pytest.approx(0.4)


def test_masked_zeros_and_nan_add_nothing():
    w = np.array([[[0.5, 0.5, 0.0, np.nan]]])
    stats = row_stats(w, TOKENS)
    assert stats["entropy"][0, 0] == pytest.approx(math.log(2))
    assert stats["mean_distance"][0, 0] == pytest.approx(0.5)


def test_no_real_rows_give_nan_not_an_error():
    stats = pattern_stats(np.full((2, 4, 4), 0.25), TOKENS, n_real=0)
    assert all(np.isnan(v).all() for v in stats.values())


def test_row_stats_rejects_bad_shapes():
    with pytest.raises(ValueError):
        row_stats(np.eye(4), TOKENS)
    with pytest.raises(ValueError):
        row_stats(np.eye(4)[None], TOKENS[:3])


def test_special_keys():
    assert special_keys(("[CLS]", "a", "[SEP]", "[PAD]", "[PAD]")).tolist() == [True, False, True, True, True]
    assert special_keys(("[CLS]", "a", "[SEP]", "[PAD]"), which=("[PAD]",)).tolist() == [False, False, False, True]


def test_special_keys_count_positions_not_strings():
    """Only the tokenizer's own [CLS] (position 0), [SEP] (length − 1) and the
    padding (from the length on) are special; the same strings elsewhere are not."""
    tokens = ("[CLS]", "see", "[PAD]", "[SEP]", "here", "[SEP]", "[PAD]")
    assert special_keys(tokens, length=6).tolist() == [True, False, False, False, False, True, True]
    assert special_keys(tokens).tolist() == [True, False, False, False, False, True, True]  # length from the trailing [PAD]s
    assert special_keys(("see", "[CLS]", "x"), length=3).tolist() == [False, False, False]


def test_pad_share_ignores_a_pad_string_at_a_real_position():
    tokens = ("[CLS]", "see", "[PAD]", "here", "[SEP]", "[PAD]")
    w = np.zeros((1, 6, 6))
    w[0, :5, 2] = 1.0  # every real query on the typed "[PAD]" at position 2
    stats = pattern_stats(w, tokens, n_real=5)
    assert stats["pad_share"][0] == 0 and stats["cls_share"][0] == 0 and stats["sep_share"][0] == 0
    w[0, :5] = 0.0
    w[0, :5, 5] = 1.0  # on the real padding position
    assert pattern_stats(w, tokens, n_real=5)["pad_share"][0] == 1


def test_head_stats_frame_has_one_row_per_layer_and_head():
    uniform = np.full((1, 2, 4, 4), 0.25)
    identity = np.broadcast_to(np.eye(4), (1, 2, 4, 4))
    frame = head_stats(trace_of(uniform, identity, uniform))
    assert isinstance(frame, pd.DataFrame) and tuple(frame.columns) == COLUMNS
    assert len(frame) == 6
    assert frame[["layer", "head"]].values.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1], [2, 0], [2, 1]]
    np.testing.assert_allclose(frame["entropy"], [math.log(4)] * 2 + [0, 0] + [math.log(4)] * 2, atol=1e-6)
    np.testing.assert_allclose(frame.loc[frame.layer == 1, "mean_distance"], 0, atol=1e-12)


def test_head_stats_per_sentence_and_pooled():
    tokens = (("[CLS]", "a", "b", "[SEP]"), ("[CLS]", "c", "[SEP]", "[PAD]"))
    w = np.zeros((2, 1, 4, 4))
    w[0, 0] = np.eye(4)  # sentence 0: entropy 0
    w[1, 0, :, :3] = 1 / 3  # sentence 1: uniform over its 3 real keys, [PAD] query row included
    trace = trace_of(w, tokens=tokens, lengths=(4, 3))
    assert head_stats(trace, 0)["entropy"].iloc[0] == pytest.approx(0)
    assert head_stats(trace, 1)["entropy"].iloc[0] == pytest.approx(math.log(3))
    # pooled: 4 rows of 0 and 3 rows of ln 3 (the [PAD] query row is not counted)
    assert head_stats(trace, None)["entropy"].iloc[0] == pytest.approx(3 * math.log(3) / 7)
    assert head_stats(trace, 1)["sep_share"].iloc[0] == pytest.approx(1 / 3)
