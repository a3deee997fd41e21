"""Attention: parity with torch's reference implementations, masking edge cases, properties."""
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_core import MultiHeadAttention, capture
from transformer_core.nn.attention import attention_scores, mask_scores, masked_softmax, scaled_dot_product_attention
from transformer_core.nn.masks import causal_mask, padding_mask, to_true_blocked

TOL = 1e-5


def _max_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


def _qkv(batch=2, heads=3, n_query=4, n_key=5, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, n_query, d, generator=g)
    k = torch.randn(batch, heads, n_key, d, generator=g)
    v = torch.randn(batch, heads, n_key, d, generator=g)
    return q, k, v


def _random_mask_with_visible_key(shape, seed):
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(shape, generator=g) > 0.4
    mask[..., 0] = True  # every row keeps at least one visible key
    return mask


# --------------------------------------------------------------------------- literal values

def test_scores_are_qk_over_sqrt_dk_literal():
    q = torch.tensor([[[[1.0, 1.0, 1.0, 1.0]]]])  # d_k = 4 → divide by 2
    k = torch.tensor([[[[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0], [1.0, -1.0, 2.0, 0.0]]]])
    assert torch.allclose(attention_scores(q, k), torch.tensor([[[[2.0, 0.0, 1.0]]]]), atol=0, rtol=0)


def test_weights_literal_two_keys():
    q = torch.tensor([[[[1.0, 1.0, 1.0, 1.0]]]])
    k = torch.tensor([[[[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]]]])
    v = torch.tensor([[[[10.0, 0.0], [0.0, 10.0]]]])
    context, weights = scaled_dot_product_attention(q, k, v)
    w0 = math.exp(2) / (math.exp(2) + 1)  # scores [2, 0]
    assert torch.allclose(weights, torch.tensor([[[[w0, 1 - w0]]]]), atol=1e-6)
    assert torch.allclose(context, torch.tensor([[[[10 * w0, 10 * (1 - w0)]]]]), atol=1e-5)
    # blocking key 0 puts all the weight on key 1
    context, weights = scaled_dot_product_attention(q, k, v, torch.tensor([[False, True]]))
    assert torch.equal(weights, torch.tensor([[[[0.0, 1.0]]]]))
    assert torch.equal(context, torch.tensor([[[[0.0, 10.0]]]]))


def test_mask_scores_fill_values():
    scores = torch.tensor([[1.0, 2.0, 3.0]])
    mask = torch.tensor([[True, False, True]])
    assert torch.equal(mask_scores(scores, mask), torch.tensor([[1.0, float("-inf"), 3.0]]))
    assert torch.equal(mask_scores(scores, mask, -1e9), torch.tensor([[1.0, -1e9, 3.0]]))
    assert mask_scores(scores, None) is scores


# --------------------------------------------------------------------------- parity with torch SDPA

@pytest.mark.parametrize("mask_shape", [(2, 3, 4, 5), (2, 1, 4, 5), (2, 1, 1, 5), (4, 5)])
def test_sdpa_parity_with_boolean_mask(mask_shape):
    q, k, v = _qkv()
    mask = _random_mask_with_visible_key(mask_shape, seed=1)
    ours, weights = scaled_dot_product_attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert _max_err(ours, ref) <= TOL
    # blocked weights are exactly 0
    assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()


def test_sdpa_parity_no_mask():
    q, k, v = _qkv(seed=3)
    ours, _ = scaled_dot_product_attention(q, k, v)
    assert _max_err(ours, F.scaled_dot_product_attention(q, k, v)) <= TOL


@pytest.mark.parametrize("n", [1, 4, 7])
def test_sdpa_parity_is_causal_square(n):
    q, k, v = _qkv(n_query=n, n_key=n, seed=n)
    ours, weights = scaled_dot_product_attention(q, k, v, causal_mask(n))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert _max_err(ours, ref) <= TOL
    assert torch.equal(weights[0, 0].triu(1), torch.zeros(n, n))  # nothing above the diagonal


def test_sdpa_parity_rectangular_causal_is_lower_right():
    # the literal lower-right mask (what torch.nn.attention.bias.causal_lower_right(2, 5) materializes)
    lower_right = torch.tensor([[True, True, True, True, False], [True, True, True, True, True]])
    q, k, v = _qkv(n_query=2, n_key=5, seed=4)
    ours, _ = scaled_dot_product_attention(q, k, v, causal_mask(2, 5))
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=lower_right)
    assert _max_err(ours, ref) <= TOL
    # and differs from torch's top-left is_causal=True for a rectangle
    top_left = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert _max_err(ours, top_left) > 1e-2


def test_sdpa_fill_minus_1e9_equals_minus_inf_when_rows_have_a_visible_key():
    q, k, v = _qkv(seed=5)
    mask = _random_mask_with_visible_key((2, 3, 4, 5), seed=6)
    a, wa = scaled_dot_product_attention(q, k, v, mask)
    b, wb = scaled_dot_product_attention(q, k, v, mask, fill_value=-1e9)
    assert torch.equal(wa, wb)
    assert torch.equal(a, b)


# --------------------------------------------------------------------------- fully masked rows

def test_fully_masked_row_gives_exact_zeros_not_nan():
    q, k, v = _qkv(batch=1, heads=2, n_query=3, n_key=4, seed=7)
    mask = torch.tensor([[True, False, True, False],
                         [False, False, False, False],  # no visible key
                         [True, True, True, True]])
    for fill in (float("-inf"), -1e9):
        context, weights = scaled_dot_product_attention(q, k, v, mask, fill_value=fill)
        assert not torch.isnan(weights).any() and not torch.isnan(context).any()
        assert torch.equal(weights[:, :, 1], torch.zeros(1, 2, 4))
        assert torch.equal(context[:, :, 1], torch.zeros(1, 2, 6))
        assert torch.allclose(weights[:, :, [0, 2]].sum(-1), torch.ones(1, 2, 2), atol=TOL)


def test_fully_masked_row_raw_softmax_behaviour():
    scores = torch.tensor([[0.5, 1.5, -2.0]])
    mask = torch.tensor([[False, False, False]])
    raw_inf = masked_softmax(mask_scores(scores, mask), mask, zero_empty_rows=False)
    assert torch.isnan(raw_inf).all()  # -inf fill: softmax of all -inf is NaN
    raw_1e9 = masked_softmax(mask_scores(scores, mask, -1e9), mask, zero_empty_rows=False)
    assert torch.allclose(raw_1e9, torch.full((1, 3), 1 / 3), atol=1e-7)  # uniform
    assert torch.equal(masked_softmax(mask_scores(scores, mask), mask), torch.zeros(1, 3))


def test_mha_fully_masked_row_weights_and_context_zero():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2).eval()
    x = torch.randn(1, 3, 8)
    mask = torch.tensor([[True, True, False], [False, False, False], [True, True, True]])
    with torch.no_grad(), capture(mha) as stages:
        out, weights = mha(x, x, x, mask)
    assert torch.equal(weights[0, :, 1], torch.zeros(2, 3))
    assert torch.equal(stages["context"][0, :, 1], torch.zeros(2, 4))
    assert torch.isfinite(out).all()
    # the empty row's output is norm(x + W_O.bias): only the bias of W_O is added
    expected = mha.norm(x[0, 1] + mha.W_O.bias)
    assert _max_err(out[0, 1], expected) <= TOL


# --------------------------------------------------------------------------- parity with nn.MultiheadAttention

def _torch_mha_like(ours: MultiHeadAttention) -> torch.nn.MultiheadAttention:
    ref = torch.nn.MultiheadAttention(ours.d_model, ours.n_heads, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.W_Q.weight, ours.W_K.weight, ours.W_V.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.W_Q.bias, ours.W_K.bias, ours.W_V.bias]))
        ref.out_proj.weight.copy_(ours.W_O.weight)
        ref.out_proj.bias.copy_(ours.W_O.bias)
    return ref


@pytest.mark.parametrize("n_heads", [1, 2, 4])
def test_mha_parity_with_torch_multihead_attention(n_heads):
    torch.manual_seed(n_heads)
    batch, n_query, n_key, d_model = 2, 3, 5, 8
    ours = MultiHeadAttention(d_model, n_heads).eval()
    ref = _torch_mha_like(ours)
    query = torch.randn(batch, n_query, d_model)
    key = torch.randn(batch, n_key, d_model)
    value = torch.randn(batch, n_key, d_model)
    mask = _random_mask_with_visible_key((batch, 1, n_query, n_key), seed=10 + n_heads)
    torch_mask = to_true_blocked(mask).expand(batch, n_heads, n_query, n_key).reshape(batch * n_heads, n_query, n_key)
    with torch.no_grad():
        with capture(ours) as stages:
            out, weights = ours(query, key, value, mask)
        ref_out, ref_weights = ref(query, key, value, attn_mask=torch_mask, need_weights=True,
                                   average_attn_weights=False)
    assert weights.shape == ref_weights.shape == (batch, n_heads, n_query, n_key)
    assert _max_err(weights, ref_weights) <= TOL
    assert _max_err(stages["projected"], ref_out) <= TOL
    assert _max_err(out, ours.norm(query + ref_out)) <= TOL


def test_mha_parity_with_torch_key_padding_mask():
    torch.manual_seed(1)
    ours = MultiHeadAttention(8, 2).eval()
    ref = _torch_mha_like(ours)
    x = torch.randn(2, 5, 8)
    lengths = [3, 5]
    mask = padding_mask(lengths)  # [batch, 1, 1, key_pos]
    with torch.no_grad(), capture(ours) as stages:
        out, weights = ours(x, x, x, mask)
        ref_out, ref_weights = ref(x, x, x, key_padding_mask=to_true_blocked(mask[:, 0, 0, :]),
                                   average_attn_weights=False)
    assert _max_err(weights, ref_weights) <= TOL
    assert _max_err(stages["projected"], ref_out) <= TOL
    assert _max_err(out, ours.norm(x + ref_out)) <= TOL
    assert torch.equal(weights[0, :, :, 3:], torch.zeros(2, 5, 2))


def test_mha_rejects_bad_sizes():
    with pytest.raises(ValueError, match="n_heads=3"):
        MultiHeadAttention(8, 3)
    with pytest.raises(ValueError, match="d_model=0"):
        MultiHeadAttention(0, 1)
    with pytest.raises(ValueError, match="n_heads=-2"):
        MultiHeadAttention(8, -2)


# --------------------------------------------------------------------------- properties

@st.composite
def attention_case(draw):
    batch = draw(st.integers(1, 3))
    heads = draw(st.integers(1, 4))
    n_query = draw(st.integers(1, 7))
    n_key = draw(st.integers(1, 7))
    d = draw(st.integers(1, 8))
    seed = draw(st.integers(0, 2**31 - 1))
    mask_heads = draw(st.sampled_from([1, heads]))
    density = draw(st.sampled_from([0.0, 0.2, 0.5, 0.8, 1.0]))
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, n_query, d, generator=g) * draw(st.sampled_from([0.1, 1.0, 10.0]))
    k = torch.randn(batch, heads, n_key, d, generator=g)
    v = torch.randn(batch, heads, n_key, d, generator=g)
    mask = torch.rand(batch, mask_heads, n_query, n_key, generator=g) < density
    empty_rows = draw(st.lists(st.integers(0, n_query - 1), max_size=n_query, unique=True))
    for row in empty_rows:  # force some rows to have no visible key
        mask[..., row, :] = False
    return q, k, v, mask


@settings(deadline=None, max_examples=80)
@given(case=attention_case(), fill=st.sampled_from([float("-inf"), -1e9]))
def test_property_scaled_dot_product_attention(case, fill):
    q, k, v, mask = case
    context, weights = scaled_dot_product_attention(q, k, v, mask, fill_value=fill)
    full_mask = mask.expand_as(weights)
    visible_rows = full_mask.any(-1)  # [batch, head, query_pos]
    assert not torch.isnan(weights).any()
    assert not torch.isnan(context).any()
    # rows with a visible key sum to 1; rows without are all exactly 0
    sums = weights.sum(-1)
    assert torch.allclose(sums[visible_rows], torch.ones_like(sums[visible_rows]), atol=TOL)
    assert (weights[~visible_rows] == 0).all()
    # blocked weights are exactly 0, visible ones are non-negative
    assert (weights[~full_mask] == 0).all()
    assert (weights >= 0).all()
    # context is weights @ v
    assert _max_err(context, weights @ v) <= TOL
    # agrees with torch where a key is visible
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    if visible_rows.any():
        assert _max_err(context[visible_rows], ref[visible_rows]) <= TOL


@settings(deadline=None, max_examples=40)
@given(case=attention_case())
def test_property_multi_head_attention_module(case):
    q, _, _, mask = case
    batch, heads, n_query, d = q.shape
    n_key = mask.shape[-1]
    torch.manual_seed(batch * 100 + heads * 10 + d)
    mha = MultiHeadAttention(heads * d, heads).eval()
    query = torch.randn(batch, n_query, heads * d)
    kv = torch.randn(batch, n_key, heads * d)
    with torch.no_grad(), capture(mha) as stages:
        out, weights = mha(query, kv, kv, mask)
    full_mask = mask.expand_as(weights)
    visible_rows = full_mask.any(-1)
    assert torch.isfinite(out).all()
    assert all(not torch.isnan(t).any() for name, t in stages.items() if name != "masked_scores")
    assert (weights[~full_mask] == 0).all()
    sums = weights.sum(-1)
    assert torch.allclose(sums[visible_rows], torch.ones_like(sums[visible_rows]), atol=TOL)
    assert (stages["context"][~visible_rows] == 0).all()
    assert _max_err(stages["context"], weights @ stages["v"]) <= TOL
