"""A non-boolean mask is refused, never silently inverted.

``F.scaled_dot_product_attention`` (torch docs, ``attn_mask``): "A boolean mask where a value
of True indicates that the element *should* take part in attention. A float mask of the same
type as query, key and value that is added to the attention score." Ours takes only the
boolean kind (``True`` = may attend); an additive float mask, or seed 000's 0/1 integers,
raise ``TypeError`` naming the dtype and the converters in :mod:`transformer_core.nn.masks`.
``masks.from_additive`` turns an additive mask into ours, checked here against SDPA itself.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from transformer_core.nn import masks
from transformer_core.nn.attention import MultiHeadAttention, mask_scores, masked_softmax, scaled_dot_product_attention

NEG_INF = float("-inf")


def qkv(n: int = 3, d: int = 4, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(1, 2, n, d, generator=g) for _ in range(3))  # [batch, head, pos, d_k]


def additive_causal(n: int) -> torch.Tensor:
    """A float (additive) causal mask: 0 where a query may look, -inf above the diagonal."""
    return torch.zeros(n, n).masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), NEG_INF)


def test_additive_causal_literal():
    assert additive_causal(3).tolist() == [[0.0, NEG_INF, NEG_INF], [0.0, 0.0, NEG_INF], [0.0, 0.0, 0.0]]


@pytest.mark.parametrize("mask, dtype", [
    (additive_causal(3), "torch.float32"),
    (additive_causal(3).half(), "torch.float16"),
    (masks.to_zero_blocked(masks.causal_mask(3)), "torch.int64"),  # seed 000's 0/1 integers
    (masks.causal_mask(3).to(torch.uint8), "torch.uint8"),
])
def test_sdpa_refuses_a_non_bool_mask_naming_dtype_and_converters(mask, dtype):
    q, k, v = qkv()
    with pytest.raises(TypeError) as info:
        scaled_dot_product_attention(q, k, v, mask)
    message = str(info.value)
    assert f"got dtype {dtype}" in message
    for name in ("transformer_core.nn.masks", "from_additive(mask)", "from_zero_blocked(mask)", "from_true_blocked(mask)"):
        assert name in message, (name, message)


def test_every_entry_point_refuses_a_float_mask():
    q, k, v = qkv()
    scores = torch.zeros(1, 2, 3, 3)
    float_mask = additive_causal(3)
    mha = MultiHeadAttention(8, 2).eval()
    x = torch.zeros(1, 3, 8)
    calls = [lambda: mask_scores(scores, float_mask), lambda: masked_softmax(scores, float_mask),
             lambda: mha(x, x, x, float_mask), lambda: masks.combine(masks.causal_mask(3), float_mask),
             lambda: masks.to_true_blocked(float_mask), lambda: masks.to_zero_blocked(float_mask),
             lambda: masks.rows_without_visible_key(float_mask), lambda: mask_scores(scores, [[True]])]
    for call in calls:
        with pytest.raises(TypeError, match="must be a torch.bool tensor with True = may attend"):
            call()


def test_bool_mask_still_matches_sdpa():
    q, k, v = qkv()
    mask = masks.causal_mask(3)
    context, _ = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(context, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), rtol=0, atol=1e-6)


@pytest.mark.parametrize("blocked", [NEG_INF, -1e9, torch.finfo(torch.float32).min, -1e4])
def test_from_additive_gives_what_sdpa_computes_with_the_additive_mask(blocked):
    q, k, v = qkv(n=4, seed=1)
    additive = torch.zeros(4, 4).masked_fill(~masks.causal_mask(4), blocked)
    additive[2, 1] = blocked  # one more blocked key, off the causal pattern
    ours = masks.from_additive(additive)
    expected = masks.causal_mask(4).clone()
    expected[2, 1] = False
    assert torch.equal(ours, expected)
    context, weights = scaled_dot_product_attention(q, k, v, ours)
    reference = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)  # SDPA adds the float mask
    torch.testing.assert_close(context, reference, rtol=0, atol=1e-6)
    assert torch.equal(weights[..., 2, 1], torch.zeros(1, 2))


def test_the_issue_case_would_have_been_inverted():
    """What ``.bool()`` used to do with the additive causal mask: row 0 saw only future keys, row 2 nothing."""
    inverted = additive_causal(3).bool()
    assert inverted.tolist() == [[False, True, True], [False, False, True], [False, False, False]]
    assert torch.equal(masks.from_additive(additive_causal(3)), masks.causal_mask(3))


@pytest.mark.parametrize("bias", [-0.5, 1.0, float("nan")])
def test_from_additive_refuses_a_finite_bias(bias):
    additive = torch.zeros(2, 2)
    additive[0, 1] = bias
    with pytest.raises(ValueError, match="a finite bias is not a yes/no mask"):
        masks.from_additive(additive)


def test_from_additive_takes_only_floats():
    with pytest.raises(TypeError, match="floating-point mask, got dtype torch.bool"):
        masks.from_additive(masks.causal_mask(2))
