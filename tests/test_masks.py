"""Masks: literal expected matrices in our convention (True = may attend) and the converters."""
import pytest
import torch

from transformer_core.nn import masks
from transformer_core.nn.masks import (causal_mask, combine, from_true_blocked, from_zero_blocked, padding_mask,
                                    to_true_blocked, to_zero_blocked)

T, F = True, False


def test_causal_square_4x4_literal():
    expected = torch.tensor([
        [T, F, F, F],
        [T, T, F, F],
        [T, T, T, F],
        [T, T, T, T],
    ])
    got = causal_mask(4)
    assert got.dtype == torch.bool
    assert got.shape == (4, 4)
    assert torch.equal(got, expected)
    assert torch.equal(causal_mask(4, 4), expected)


def test_causal_two_queries_over_five_keys_is_bottom_right_aligned():
    # query 0 sees keys 0..3, query 1 (the last) sees all keys 0..4
    expected = torch.tensor([
        [T, T, T, T, F],
        [T, T, T, T, T],
    ])
    assert torch.equal(causal_mask(2, 5), expected)


def test_causal_rectangular_differs_from_torch_top_left():
    # torch's is_causal=True is tril of the rectangle: query 0 sees only key 0
    top_left = torch.ones(2, 5, dtype=torch.bool).tril()
    assert not torch.equal(causal_mask(2, 5), top_left)
    assert causal_mask(2, 5).sum().item() == 9 and top_left.sum().item() == 3


def test_causal_more_queries_than_keys_has_empty_first_rows():
    expected = torch.tensor([
        [F, F],
        [T, F],
        [T, T],
    ])
    assert torch.equal(causal_mask(3, 2), expected)
    assert torch.equal(masks.rows_without_visible_key(causal_mask(3, 2)), torch.tensor([T, F, F]))


def test_causal_zero_and_one():
    assert causal_mask(0).shape == (0, 0)
    assert torch.equal(causal_mask(1), torch.tensor([[T]]))


@pytest.mark.parametrize("n_query, n_key", [(-1, None), (2, -1), (-3, 4)])
def test_causal_negative_lengths_raise(n_query, n_key):
    with pytest.raises(ValueError, match="-"):
        causal_mask(n_query, n_key)


def test_padding_lengths_3_5_literal():
    expected = torch.tensor([
        [T, T, T, F, F],
        [T, T, T, T, T],
    ]).reshape(2, 1, 1, 5)
    got = padding_mask([3, 5])
    assert got.dtype == torch.bool
    assert got.shape == (2, 1, 1, 5)
    assert torch.equal(got, expected)


def test_padding_explicit_max_len_and_tensor_lengths():
    got = padding_mask(torch.tensor([1, 0]), max_len=3)
    expected = torch.tensor([[T, F, F], [F, F, F]]).reshape(2, 1, 1, 3)
    assert torch.equal(got, expected)


@pytest.mark.parametrize("lengths, max_len", [([3, -1], None), ([3, 6], 5), ([2], 1), ([-2], 4)])
def test_padding_bad_lengths_raise(lengths, max_len):
    with pytest.raises(ValueError, match=r"lengths must be in"):
        padding_mask(lengths, max_len)


def test_padding_broadcasts_to_bhqk():
    mask = padding_mask([3, 5])
    scores = torch.zeros(2, 4, 6, 5)  # batch, head, query_pos, key_pos
    assert torch.broadcast_shapes(mask.shape, scores.shape) == scores.shape


def test_combine_causal_and_padding_literal():
    combined = combine(causal_mask(5)[None, None], padding_mask([3, 5]))
    assert combined.shape == (2, 1, 5, 5)
    expected_0 = torch.tensor([
        [T, F, F, F, F],
        [T, T, F, F, F],
        [T, T, T, F, F],
        [T, T, T, F, F],  # padding query rows still see the real keys
        [T, T, T, F, F],
    ])
    assert torch.equal(combined[0, 0], expected_0)
    assert torch.equal(combined[1, 0], causal_mask(5))


def test_combine_none_handling():
    m = torch.tensor([[T, F], [F, T]])
    assert combine() is None
    assert combine(None, None) is None
    assert combine(None, m) is m
    assert torch.equal(combine(m, torch.tensor([[T, T], [F, F]])), torch.tensor([[T, F], [F, F]]))


def test_true_blocked_conversion_literal_and_round_trip():
    ours = torch.tensor([[T, F, T], [F, F, T]])
    blocked = to_true_blocked(ours)
    assert torch.equal(blocked, torch.tensor([[F, T, F], [T, T, F]]))
    assert torch.equal(from_true_blocked(blocked), ours)
    # from_true_blocked accepts 0/1 integer masks (True = blocked) too
    assert torch.equal(from_true_blocked(torch.tensor([[0, 1, 0], [1, 1, 0]])), ours)


def test_zero_blocked_conversion_literal_and_round_trip():
    ours = torch.tensor([[T, F, T], [F, F, T]])
    zero_blocked = to_zero_blocked(ours)
    assert zero_blocked.dtype == torch.long
    assert torch.equal(zero_blocked, torch.tensor([[1, 0, 1], [0, 0, 1]]))
    assert torch.equal(from_zero_blocked(zero_blocked), ours)
    # seed 000: anything non-zero may attend (ints, floats, bools)
    assert torch.equal(from_zero_blocked(torch.tensor([[2.0, 0.0, -1.0], [0.0, 0.0, 0.5]])), ours)
    assert torch.equal(from_zero_blocked(ours), ours)


def test_converters_round_trip_random():
    g = torch.Generator().manual_seed(0)
    ours = torch.rand(3, 2, 4, 5, generator=g) > 0.5
    assert torch.equal(from_true_blocked(to_true_blocked(ours)), ours)
    assert torch.equal(from_zero_blocked(to_zero_blocked(ours)), ours)
    # the two foreign conventions describe the same blocked cells
    assert torch.equal(to_true_blocked(ours), to_zero_blocked(ours) == 0)


def test_rows_without_visible_key():
    m = torch.tensor([[T, F], [F, F], [F, T]])
    assert torch.equal(masks.rows_without_visible_key(m), torch.tensor([F, T, F]))
    assert masks.rows_without_visible_key(None) is None
