"""FlashAttention's online softmax: the tiled computation equals plain softmax attention, at any tile
size (also ones that do not divide the length), with fully masked tiles skipped; without the running-max
correction it does not."""
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_core.nn.masks import causal_mask, sliding_window_mask
from transformer_core.nn.online_softmax import (online_attention, plain_attention, plain_peak_bytes,
                                                tiled_peak_bytes)


def qkv(n_query, n_key, d=8, seed=0, spread=3.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n_query, d, generator=g) * spread, torch.randn(n_key, d, generator=g) * spread,
            torch.randn(n_key, d, generator=g))


def reference(q, k, v, mask=None):
    weights = torch.softmax((q @ k.T / math.sqrt(q.shape[1])).masked_fill(
        torch.zeros(1, dtype=torch.bool) if mask is None else ~mask, -math.inf), dim=-1)
    return weights @ v


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), block_q=st.integers(1, 17), block_k=st.integers(1, 17), seed=st.integers(0, 10**6),
       kind=st.sampled_from(["none", "causal", "window", "window+sink"]), window=st.integers(1, 9))
def test_tiled_equals_sdpa_at_random_tile_sizes(n, block_q, block_k, seed, kind, window):
    q, k, v = qkv(n, n, seed=seed)
    mask = {"none": None, "causal": causal_mask(n), "window": sliding_window_mask(n, window=window),
            "window+sink": sliding_window_mask(n, window=window, sinks=2)}[kind]
    got = online_attention(q, k, v, mask, block_q=block_q, block_k=block_k).output
    expected = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=mask)[0]
    assert torch.allclose(got, expected, atol=2e-5, rtol=1e-5)
    assert torch.allclose(got, plain_attention(q, k, v, mask), atol=2e-5, rtol=1e-5)


def test_tiles_not_dividing_t_and_fully_masked_tiles_are_skipped():
    q, k, v = qkv(23, 23, seed=1)
    mask = sliding_window_mask(23, window=4)  # causal + window 4: most tiles far from the diagonal are empty
    result = online_attention(q, k, v, mask, block_q=5, block_k=3, record=True)
    n_tiles = math.ceil(23 / 5) * math.ceil(23 / 3)
    assert result.tiles_computed + result.tiles_skipped == n_tiles == len(result.steps)
    assert result.tiles_skipped > result.tiles_computed > 0
    for step in result.steps:  # a tile is skipped exactly when the mask blocks all of it
        (r0, r1), (c0, c1) = step.rows, step.cols
        assert step.skipped == (not bool(mask[r0:r1, c0:c1].any()))
    assert torch.allclose(result.output, reference(q, k, v, mask), atol=2e-5)


def test_the_record_ends_at_the_output_and_its_m_and_l_are_the_rows_max_and_sum():
    q, k, v = qkv(7, 10, seed=2)
    result = online_attention(q, k, v, block_q=4, block_k=3, record=True)
    scores = q @ k.T / math.sqrt(8)
    for step in result.steps:
        (r0, r1), (_, c1) = step.rows, step.cols
        seen = scores[r0:r1, :c1]  # every key up to the end of this tile
        assert torch.allclose(step.m, seen.max(dim=1).values, atol=1e-6)
        assert torch.allclose(step.l, torch.exp(seen - step.m[:, None]).sum(dim=1), rtol=1e-5)
        # the partial output is attention over the keys seen so far
        assert torch.allclose(step.output, torch.softmax(seen, -1) @ v[:c1], atol=2e-5)
    last = [s for s in result.steps if s.cols[1] == 10]
    assert torch.allclose(torch.cat([s.output for s in last]), result.output)


def test_dropping_the_running_max_correction_gives_wrong_numbers():
    # keys whose scores grow from tile to tile: each new tile raises the row maximum
    q = torch.ones(3, 4)
    k = torch.arange(12, dtype=torch.float32)[:, None].repeat(1, 4) * 0.5
    v = torch.randn(12, 4, generator=torch.Generator().manual_seed(3))
    right = online_attention(q, k, v, block_q=3, block_k=4).output
    wrong = online_attention(q, k, v, block_q=3, block_k=4, correct=False).output
    assert torch.allclose(right, reference(q, k, v), atol=1e-5)
    assert not torch.allclose(wrong, reference(q, k, v), atol=1e-2)
    # with one key tile there is nothing to correct: the two agree
    assert torch.allclose(online_attention(q, k, v, block_q=3, block_k=12, correct=False).output, right, atol=1e-6)


def test_random_inputs_also_need_the_correction():
    q, k, v = qkv(16, 16, seed=4)
    wrong = online_attention(q, k, v, causal_mask(16), block_q=4, block_k=4, correct=False).output
    assert not torch.allclose(wrong, reference(q, k, v, causal_mask(16)), atol=1e-3)


def test_a_row_with_no_visible_key_is_zero_as_in_masked_softmax():
    q, k, v = qkv(3, 4, seed=5)
    mask = causal_mask(3, 2)[:, :2].new_zeros(3, 4)  # all blocked
    mask[1:, 0] = True
    out = online_attention(q, k, v, mask, block_q=2, block_k=3).output
    assert torch.equal(out[0], torch.zeros(8))
    assert torch.allclose(out[1:], plain_attention(q, k, v, mask)[1:], atol=1e-6)
    assert torch.equal(plain_attention(q, k, v, mask)[0], torch.zeros(8))


def test_peak_bytes_tiled_vs_plain():
    assert plain_peak_bytes(2048, 2048) == 2 * 2048 * 2048 * 4  # 32 MiB of scores and weights
    assert tiled_peak_bytes(2048, 2048, 64, 64, 64) == (2 * 64 * 64 + 2 * 64 + 64 * 64) * 4  # 49,664 bytes
    assert tiled_peak_bytes(5, 5, 8, 64, 64) == (2 * 5 * 5 + 2 * 5 + 5 * 8) * 4  # a block wider than the input
    assert online_attention(*qkv(9, 9), block_q=4, block_k=4).peak_bytes == tiled_peak_bytes(9, 9, 8, 4, 4)


@pytest.mark.parametrize("kwargs, error", [
    (dict(block_q=0), ValueError), (dict(block_k=2.5), ValueError),
    (dict(mask=torch.zeros(4, 4)), TypeError), (dict(mask=torch.ones(3, 4, dtype=torch.bool)), ValueError)])
def test_bad_input_raises(kwargs, error):
    with pytest.raises(error):
        online_attention(*qkv(4, 4), **kwargs)


def test_q_must_be_one_head():
    q, k, v = qkv(4, 4)
    with pytest.raises(ValueError, match="one head"):
        online_attention(q[None], k, v)
