"""ALiBi (Press et al. 2022): the slopes of the paper, the rule for other head counts, and the bias matrix."""
import math

import pytest
import torch

from transformer_core.nn.alibi import alibi_bias, alibi_slopes


def test_eight_heads_are_one_half_to_one_256th():
    # §3: "For models with 8 heads, the slopes that we used are the geometric sequence 1/2^1, 1/2^2, ..., 1/2^8"
    assert alibi_slopes(8).tolist() == [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]


def test_sixteen_heads_start_at_one_over_root_two():
    # §3: for 16 heads, 1/2^0.5, 1/2^1, 1/2^1.5, ..., 1/2^8 (every other one is the 8-head slope)
    expected = torch.tensor([2.0 ** (-0.5 * h) for h in range(1, 17)])
    assert torch.allclose(alibi_slopes(16), expected, rtol=0, atol=1e-7)
    assert alibi_slopes(16)[1::2].tolist() == alibi_slopes(8).tolist()


@pytest.mark.parametrize("n", [1, 2, 4, 32])
def test_power_of_two_rule(n):
    expected = torch.tensor([2.0 ** (-8 * h / n) for h in range(1, n + 1)])
    assert torch.allclose(alibi_slopes(n), expected, rtol=1e-6, atol=0)


def test_twelve_heads_literal():
    # 8 heads' slopes, then the odd-numbered slopes of 16 heads: 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5
    expected = [2.0 ** -h for h in range(1, 9)] + [2.0 ** -0.5, 2.0 ** -1.5, 2.0 ** -2.5, 2.0 ** -3.5]
    assert torch.allclose(alibi_slopes(12), torch.tensor(expected), rtol=1e-6, atol=0)


@pytest.mark.parametrize("n", [3, 5, 6, 9, 12, 20])
def test_other_head_counts_match_bloom(n):
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor  # test-only reference

    bloom = build_alibi_tensor(torch.ones(1, 2, dtype=torch.long), n, torch.float32)  # [head, 1, key_pos]: m_h · j
    assert torch.allclose(alibi_slopes(n), bloom[:, 0, 1], rtol=1e-6, atol=0)


def test_bias_literal_and_same_weights_as_bloom_under_a_causal_mask():
    bias = alibi_bias(4, n_heads=2)  # slopes 1/16, 1/256
    assert bias.shape == (2, 4, 4)
    assert torch.equal(bias[0], -torch.tensor([[0, 1, 2, 3], [1, 0, 1, 2], [2, 1, 0, 1], [3, 2, 1, 0]]) / 16)
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    scores = torch.randn(2, 4, 4, generator=torch.Generator().manual_seed(0))
    ours = torch.softmax((scores + bias).masked_fill(~causal, -math.inf), -1)
    bloom = alibi_slopes(2)[:, None, None] * torch.arange(4.0)[None, None, :]  # + m_h · j, BLOOM's form
    theirs = torch.softmax((scores + bloom).masked_fill(~causal, -math.inf), -1)
    assert torch.allclose(ours, theirs, atol=1e-6)


def test_new_query_against_a_cache_gets_the_full_row():
    assert torch.equal(alibi_bias(1, 6, n_heads=4)[:, 0], alibi_bias(6, n_heads=4)[:, -1])


@pytest.mark.parametrize("bad", [0, -2, 2.5, True])
def test_bad_head_counts_raise(bad):
    with pytest.raises(ValueError):
        alibi_slopes(bad)


def test_slopes_or_heads_not_both():
    with pytest.raises(ValueError):
        alibi_bias(3)
    with pytest.raises(ValueError):
        alibi_bias(3, slopes=torch.ones(2), n_heads=2)
