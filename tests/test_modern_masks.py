"""Sliding-window and sink masks: literal matrices in our convention (True = may attend)."""
import numpy as np
import pytest
import torch

from transformer_core.nn.masks import causal_mask, sliding_window_mask

T, F = True, False


def test_window_3_over_6_literal():
    expected = torch.tensor([
        [T, F, F, F, F, F],
        [T, T, F, F, F, F],
        [T, T, T, F, F, F],
        [F, T, T, T, F, F],
        [F, F, T, T, T, F],
        [F, F, F, T, T, T],
    ])
    got = sliding_window_mask(6, window=3)
    assert got.dtype == torch.bool and torch.equal(got, expected)


def test_window_3_with_one_sink_keeps_the_first_column():
    expected = torch.tensor([
        [T, F, F, F, F, F],
        [T, T, F, F, F, F],
        [T, T, T, F, F, F],
        [T, T, T, T, F, F],
        [T, F, T, T, T, F],
        [T, F, F, T, T, T],
    ])
    assert torch.equal(sliding_window_mask(6, window=3, sinks=1), expected)


def test_window_2_with_two_sinks_literal():
    expected = torch.tensor([
        [T, F, F, F, F],
        [T, T, F, F, F],
        [T, T, T, F, F],
        [T, T, T, T, F],
        [T, T, F, T, T],
    ])
    assert torch.equal(sliding_window_mask(5, window=2, sinks=2), expected)


def test_new_queries_against_a_cache_are_bottom_right_aligned():
    # two new queries at positions 3 and 4 over five keys, window 2
    expected = torch.tensor([
        [F, F, T, T, F],
        [F, F, F, T, T],
    ])
    assert torch.equal(sliding_window_mask(2, 5, window=2), expected)
    assert torch.equal(sliding_window_mask(2, 5, window=2), sliding_window_mask(5, window=2)[3:])


def test_window_1_is_the_diagonal_and_a_sink_never_reaches_the_future():
    assert torch.equal(sliding_window_mask(4, window=1), torch.eye(4, dtype=torch.bool))
    got = sliding_window_mask(4, window=1, sinks=3)
    assert torch.equal(got, torch.tensor([[T, F, F, F], [T, T, F, F], [T, T, T, F], [T, T, T, T]]))


@pytest.mark.parametrize("n", [0, 1, 7, 12])
def test_a_window_as_long_as_the_input_is_the_causal_mask(n):
    assert torch.equal(sliding_window_mask(n, window=max(n, 1)), causal_mask(n))
    assert torch.equal(sliding_window_mask(n, window=n + 5, sinks=2), causal_mask(n))


def test_numpy_integers_are_taken():
    assert torch.equal(sliding_window_mask(5, window=np.int64(2), sinks=np.int32(1)),
                       sliding_window_mask(5, window=2, sinks=1))


@pytest.mark.parametrize("kwargs", [dict(window=0), dict(window=-1), dict(window=2.0), dict(window=True),
                                    dict(window=2, sinks=-1), dict(window=2, sinks=1.5)])
def test_bad_window_or_sinks_raise(kwargs):
    with pytest.raises(ValueError):
        sliding_window_mask(4, **kwargs)


def test_negative_lengths_raise():
    with pytest.raises(ValueError):
        sliding_window_mask(-1, window=2)
