"""Our modules reproduce the tutorial seeds (transcribed in ``seeds_reference.py``) given the
same weights, each under the seed's own mask convention converted to ours; and the places
where we deliberately differ (fully masked rows, seed 001's fixed √64 scale) are pinned down."""
import math

import pytest
import torch
from torch import nn

import seeds_reference as seeds
from transformer_core import MultiHeadAttention, PositionwiseFeedForward, capture
from transformer_core.nn.attention import attention_scores, mask_scores, masked_softmax, scaled_dot_product_attention
from transformer_core.nn.masks import causal_mask, from_true_blocked, from_zero_blocked, padding_mask, to_true_blocked

TOL = 1e-5


def _max_err(a, b):
    return (a - b).abs().max().item()


def _renamed(state_dict, renames):
    out = {}
    for key, value in state_dict.items():
        module, _, param = key.partition(".")
        out[f"{renames.get(module, module)}.{param}"] = value
    return out


# --------------------------------------------------------------------------- seed 000

def _seed000_pair(d_model=8, n_heads=2, dropout=0.1, seed=0):
    torch.manual_seed(seed)
    seed_mha = seeds.MultiHeadAttention000(d_model, n_heads, dropout).eval()
    with torch.no_grad():  # make the LayerNorm affine non-trivial so the copy is really tested
        seed_mha.norm.weight.uniform_(0.5, 1.5)
        seed_mha.norm.bias.uniform_(-0.5, 0.5)
    ours = MultiHeadAttention(d_model, n_heads, dropout).eval()
    ours.load_state_dict(_renamed(seed_mha.state_dict(), {"fc": "W_O"}))
    return seed_mha, ours


def _seed000_mask():
    """Seed 000 convention (int, 0 = blocked): causal for sentence 0, padding (length 2) for sentence 1."""
    causal = causal_mask(4).long()  # [query_pos, key_pos]
    pad = torch.tensor([[1, 1, 0, 0]]).expand(4, 4)
    return torch.stack([causal, pad])[:, None]  # [batch, 1, query_pos, key_pos]


def test_seed000_self_attention_matches_our_sdpa():
    torch.manual_seed(1)
    q, k, v = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5)
    seed_mask = _seed000_mask()
    seed_attn = seeds.Self_Attention(dropout=0.1).eval()
    with torch.no_grad():
        seed_out, seed_weights = seed_attn(q, k, v, seed_mask)
        out, weights = scaled_dot_product_attention(q, k, v, from_zero_blocked(seed_mask))
    assert _max_err(weights, seed_weights) <= TOL
    assert _max_err(out, seed_out) <= TOL
    # the mask really did something: sentence 1 ignores keys 2 and 3
    assert torch.equal(weights[1, :, :, 2:], torch.zeros(3, 4, 2))


@pytest.mark.parametrize("with_mask", [False, True])
def test_seed000_multi_head_attention_matches_ours(with_mask):
    seed_mha, ours = _seed000_pair()
    torch.manual_seed(2)
    x = torch.randn(2, 4, 8)
    seed_mask = _seed000_mask() if with_mask else None
    our_mask = from_zero_blocked(seed_mask) if with_mask else None
    with torch.no_grad():
        seed_out, seed_weights = seed_mha(x, x, x, seed_mask)
        out, weights = ours(x, x, x, our_mask)
    assert _max_err(weights, seed_weights) <= TOL
    assert _max_err(out, seed_out) <= TOL


def test_seed000_cross_attention_matches_ours():
    seed_mha, ours = _seed000_pair(d_model=12, n_heads=3, seed=3)
    torch.manual_seed(4)
    query, memory = torch.randn(2, 3, 12), torch.randn(2, 5, 12)
    seed_mask = torch.tensor([1, 1, 1, 0, 1])  # 0 = blocked, broadcasts over batch/head/query
    with torch.no_grad():
        seed_out, seed_weights = seed_mha(query, memory, memory, seed_mask)
        out, weights = ours(query, memory, memory, from_zero_blocked(seed_mask))
    assert _max_err(weights, seed_weights) <= TOL
    assert _max_err(out, seed_out) <= TOL


def test_seed000_fully_masked_row_is_nan_ours_is_zero():
    seed_mha, ours = _seed000_pair()
    torch.manual_seed(5)
    x = torch.randn(1, 3, 8)
    seed_mask = torch.tensor([[1, 0, 0], [0, 0, 0], [1, 1, 1]])  # query 1 sees nothing
    with torch.no_grad():
        seed_out, seed_weights = seed_mha(x, x, x, seed_mask)
        with capture(ours) as stages:
            out, weights = ours(x, x, x, from_zero_blocked(seed_mask))
    # seed 000: softmax over a row of -inf is NaN, and the NaN reaches the output row
    assert torch.isnan(seed_weights[0, :, 1]).all()
    assert torch.isnan(seed_out[0, 1]).all()
    # ours: exactly zero weights and context, finite output
    assert torch.equal(weights[0, :, 1], torch.zeros(2, 3))
    assert torch.equal(stages["context"][0, :, 1], torch.zeros(2, 4))
    assert torch.isfinite(out).all()
    # the other rows agree with the seed
    assert _max_err(weights[0, :, [0, 2]], seed_weights[0, :, [0, 2]]) <= TOL
    assert _max_err(out[0, [0, 2]], seed_out[0, [0, 2]]) <= TOL
    # zero_empty_rows=False reproduces the seed's raw behaviour (NaN exactly where the seed has NaN)
    raw = masked_softmax(mask_scores(stages["scores"], from_zero_blocked(seed_mask)),
                         from_zero_blocked(seed_mask), zero_empty_rows=False)
    assert torch.equal(torch.isnan(raw), torch.isnan(seed_weights))
    finite = ~torch.isnan(raw)
    assert _max_err(raw[finite], seed_weights[finite]) <= TOL


# --------------------------------------------------------------------------- seed 001

def _seed001_pair(fill_value=float("-inf"), seed=0):
    torch.manual_seed(seed)
    seed_mha = seeds.MultiHeadAttention001().eval()
    with torch.no_grad():
        seed_mha.layer_norm.weight.uniform_(0.5, 1.5)
        seed_mha.layer_norm.bias.uniform_(-0.5, 0.5)
    ours = MultiHeadAttention(seeds.d_embedding, seeds.n_heads, fill_value=fill_value).eval()
    assert ours.d_k == seeds.d_k == 64  # d_model 512 / 8 heads matches the seed's global
    ours.load_state_dict(_renamed(seed_mha.state_dict(), {"linear": "W_O", "layer_norm": "norm"}))
    return seed_mha, ours


def _seed001_mask(n_query=5, n_key=5):
    """Seed 001 convention (bool, True = blocked) ``[batch, query_pos, key_pos]``: padding + causal."""
    ours = padding_mask([3, n_key])[:, 0] & causal_mask(n_query, n_key)  # [batch, query_pos, key_pos]
    return to_true_blocked(ours)


@pytest.mark.parametrize("fill_value", [float("-inf"), -1e9])
def test_seed001_multi_head_attention_matches_ours(fill_value):
    seed_mha, ours = _seed001_pair(fill_value)
    torch.manual_seed(6)
    x = torch.randn(2, 5, seeds.d_embedding)
    seed_mask = _seed001_mask()
    with torch.no_grad():
        seed_out, seed_weights = seed_mha(x, x, x, seed_mask.clone())
        out, weights = ours(x, x, x, from_true_blocked(seed_mask)[:, None])  # [batch, 1, query_pos, key_pos]
    assert _max_err(weights, seed_weights) <= TOL
    assert _max_err(out, seed_out) <= TOL
    assert torch.equal(weights[0, :, :, 3:], torch.zeros(8, 5, 2))  # padding keys of sentence 0


def test_seed001_cross_attention_matches_ours():
    seed_mha, ours = _seed001_pair(-1e9, seed=7)
    torch.manual_seed(8)
    query, memory = torch.randn(2, 3, 512), torch.randn(2, 6, 512)
    seed_mask = torch.zeros(2, 3, 6, dtype=torch.bool)
    seed_mask[1, :, 4:] = True  # sentence 1: the last two memory positions are padding
    with torch.no_grad():
        seed_out, seed_weights = seed_mha(query, memory, memory, seed_mask)
        out, weights = ours(query, memory, memory, from_true_blocked(seed_mask)[:, None])
    assert _max_err(weights, seed_weights) <= TOL
    assert _max_err(out, seed_out) <= TOL


def test_seed001_fully_masked_row_is_uniform_ours_is_zero():
    seed_mha, ours = _seed001_pair(-1e9, seed=9)
    torch.manual_seed(10)
    x = torch.randn(1, 4, 512)
    seed_mask = torch.zeros(1, 4, 4, dtype=torch.bool)
    seed_mask[0, 2] = True  # query 2 sees nothing
    our_mask = from_true_blocked(seed_mask)[:, None]
    with torch.no_grad():
        seed_out, seed_weights = seed_mha(x, x, x, seed_mask)
        with capture(ours) as stages:
            out, weights = ours(x, x, x, our_mask)
    # seed 001: -1e9 everywhere ⇒ softmax is uniform 1/n_keys; no NaN
    assert torch.allclose(seed_weights[0, :, 2], torch.full((8, 4), 0.25), atol=1e-7)
    assert not torch.isnan(seed_out).any()
    # ours: exactly zero
    assert torch.equal(weights[0, :, 2], torch.zeros(8, 4))
    assert torch.equal(stages["context"][0, :, 2], torch.zeros(8, 64))
    assert _max_err(out[0, 2], seed_out[0, 2]) > 1e-2  # so that output row differs from the seed
    # other rows agree
    assert _max_err(weights[0, :, [0, 1, 3]], seed_weights[0, :, [0, 1, 3]]) <= TOL
    assert _max_err(out[0, [0, 1, 3]], seed_out[0, [0, 1, 3]]) <= TOL
    # zero_empty_rows=False with fill -1e9 reproduces the seed exactly, uniform row included
    raw = masked_softmax(mask_scores(stages["scores"], our_mask, -1e9), our_mask, zero_empty_rows=False)
    assert _max_err(raw, seed_weights) <= TOL


def test_seed001_scaled_dot_product_attention_raw_matches_ours_with_dk_64():
    torch.manual_seed(11)
    q, k, v = torch.randn(2, 2, 3, 64), torch.randn(2, 2, 4, 64), torch.randn(2, 2, 4, 64)
    seed_mask = torch.zeros(2, 2, 3, 4, dtype=torch.bool)
    seed_mask[0, 1, 1] = True  # one fully masked row
    seed_mask[1, :, :, 0] = True
    seed_context, seed_weights = seeds.ScaledDotProductAttention()(q, k, v, seed_mask)
    context, weights = scaled_dot_product_attention(q, k, v, from_true_blocked(seed_mask),
                                                    fill_value=-1e9, zero_empty_rows=False)
    assert _max_err(weights, seed_weights) <= TOL
    assert _max_err(context, seed_context) <= TOL
    # the default (zero_empty_rows=True) differs only on that row
    context0, weights0 = scaled_dot_product_attention(q, k, v, from_true_blocked(seed_mask), fill_value=-1e9)
    assert torch.equal(weights0[0, 1, 1], torch.zeros(4)) and torch.equal(context0[0, 1, 1], torch.zeros(64))
    assert torch.allclose(seed_weights[0, 1, 1], torch.full((4,), 0.25))


def test_seed001_scale_is_fixed_sqrt_64_ours_uses_actual_dk():
    # d_k = 4: we divide by √4 = 2, seed 001 divides by its global √64 = 8
    q = torch.tensor([[[[1.0, 1.0, 1.0, 1.0]]]])
    k = torch.tensor([[[[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]]]])  # q·k = [4, 0]
    v = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]]]])
    no_block = torch.zeros(1, 1, 1, 2, dtype=torch.bool)
    assert torch.equal(attention_scores(q, k), torch.tensor([[[[2.0, 0.0]]]]))
    _, seed_weights = seeds.ScaledDotProductAttention()(q, k, v, no_block)
    _, weights = scaled_dot_product_attention(q, k, v)
    ours_expected = [math.exp(2) / (math.exp(2) + 1), 1 / (math.exp(2) + 1)]  # softmax([2, 0]) = [0.8808, 0.1192]
    seed_expected = [math.exp(0.5) / (math.exp(0.5) + 1), 1 / (math.exp(0.5) + 1)]  # softmax([0.5, 0]) = [0.6225, 0.3775]
    assert torch.allclose(weights[0, 0, 0], torch.tensor(ours_expected), atol=1e-6)
    assert torch.allclose(seed_weights[0, 0, 0], torch.tensor(seed_expected), atol=1e-6)
    assert abs(weights[0, 0, 0, 0].item() - seed_weights[0, 0, 0, 0].item()) > 0.25
    # the seed's scores are ours × √4/√64 = ours / 4
    seed_scores = torch.log(seed_weights[0, 0, 0]) - torch.log(seed_weights[0, 0, 0, 1])
    assert torch.allclose(seed_scores, torch.tensor([0.5, 0.0]), atol=1e-6)


def test_seed001_scale_agrees_only_when_dk_is_64():
    torch.manual_seed(12)
    for d in (16, 64, 128):
        q, k, v = torch.randn(1, 1, 3, d), torch.randn(1, 1, 3, d), torch.randn(1, 1, 3, d)
        _, seed_weights = seeds.ScaledDotProductAttention()(q, k, v, torch.zeros(1, 1, 3, 3, dtype=torch.bool))
        _, weights = scaled_dot_product_attention(q, k, v)
        if d == 64:
            assert _max_err(weights, seed_weights) <= TOL
        else:
            assert _max_err(weights, seed_weights) > 1e-3


# --------------------------------------------------------------------------- seed 001 feed-forward

def test_conv1d_kernel_1_equals_linear():
    conv = nn.Conv1d(3, 2, kernel_size=1)
    with torch.no_grad():
        conv.weight.copy_(torch.tensor([[[1.0], [2.0], [3.0]], [[-1.0], [0.0], [0.5]]]))
        conv.bias.copy_(torch.tensor([0.5, -1.0]))
    linear = nn.Linear(3, 2)
    with torch.no_grad():
        linear.weight.copy_(conv.weight.squeeze(-1))
        linear.bias.copy_(conv.bias)
    x = torch.tensor([[[1.0, 0.0, -1.0], [2.0, 1.0, 0.0]]])  # [batch, pos, in]
    expected = torch.tensor([[[1.0 - 3.0 + 0.5, -1.0 - 0.5 - 1.0], [2.0 + 2.0 + 0.5, -2.0 - 1.0]]])
    conv_out = conv(x.transpose(1, 2)).transpose(1, 2)
    assert torch.allclose(conv_out, expected, atol=1e-6)
    assert torch.allclose(linear(x), expected, atol=1e-6)


def test_seed001_poswise_feed_forward_matches_ours():
    torch.manual_seed(13)
    seed_ffn = seeds.PoswiseFeedForwardNet(d_ff=2048).eval()
    with torch.no_grad():
        seed_ffn.layer_norm.weight.uniform_(0.5, 1.5)
        seed_ffn.layer_norm.bias.uniform_(-0.5, 0.5)
    ours = PositionwiseFeedForward(seeds.d_embedding, 2048).eval()
    sd = seed_ffn.state_dict()
    ours.load_state_dict({
        "W_1.weight": sd["conv1.weight"].squeeze(-1), "W_1.bias": sd["conv1.bias"],
        "W_2.weight": sd["conv2.weight"].squeeze(-1), "W_2.bias": sd["conv2.bias"],
        "norm.weight": sd["layer_norm.weight"], "norm.bias": sd["layer_norm.bias"],
    })
    x = torch.randn(2, 5, seeds.d_embedding)
    with torch.no_grad():
        assert _max_err(ours(x), seed_ffn(x)) <= TOL
