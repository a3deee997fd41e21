"""The LLaMA pieces on their own: RMSNorm's formula, RoPE's relative-position property, key/value groups, the
GGUF row permutation on a literal matrix, and the KV cache (cached generation = uncached generation).

Independent references: the formulas written out here with NumPy, and a literal 4 × 2 matrix.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_core.models.gguf_weights import permute_rows, unpermute_rows
from transformer_core.models.smollm2 import SmolLM2
from transformer_core.nn.gqa import GroupedQueryAttention, KVCache, LlamaConfig, causal_mask, rope_for
from transformer_core.nn.hooks import capture
from transformer_core.nn.rotary import RMSNorm, apply_rotary, rope_tables

TINY = LlamaConfig(vocab_size=50, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=48, rope_base=10000.0,
                   max_positions=64)


def tiny_model(seed: int = 0) -> SmolLM2:
    return SmolLM2(TINY).init_random(seed, std=0.3).eval()


def test_rms_norm_is_the_formula():
    x = torch.randn(2, 3, 8)
    norm = RMSNorm(8, eps=1e-5)
    norm.weight.data = torch.arange(1.0, 9.0)
    expected = x.numpy() / np.sqrt((x.numpy() ** 2).mean(-1, keepdims=True) + 1e-5) * np.arange(1.0, 9.0)
    np.testing.assert_allclose(norm(x).detach().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_rotary_turns_the_pair_i_and_i_plus_half_by_pos_times_theta():
    d, base, pos = 8, 100.0, 3
    cos, sin = rope_tables(torch.tensor([pos]), d, base)
    x = torch.zeros(1, 1, 1, d)
    x[..., 1], x[..., 1 + d // 2] = 1.0, 0.0  # the pair (x_1, x_5) = (1, 0)
    out = apply_rotary(x, cos, sin)[0, 0, 0]
    angle = pos * base ** (-2 * 1 / d)
    assert out[1].item() == pytest.approx(np.cos(angle), abs=1e-6)
    assert out[5].item() == pytest.approx(np.sin(angle), abs=1e-6)
    assert out[[0, 2, 3, 4, 6, 7]].abs().max().item() == 0


def test_q_dot_k_after_rope_depends_only_on_the_relative_position():
    torch.manual_seed(0)
    q, k = torch.randn(64), torch.randn(64)

    def score(m: int, n: int) -> float:
        cos, sin = rope_tables(torch.tensor([m, n]), 64, 100000.0)
        rq = apply_rotary(q.view(1, 1, 1, 64), cos[:1], sin[:1])
        rk = apply_rotary(k.view(1, 1, 1, 64), cos[1:], sin[1:])
        return float((rq * rk).sum())

    for offset in (0, 1, 5, 40):
        same = [score(m, m - offset) for m in (offset, offset + 7, offset + 100, offset + 3000)]
        assert max(same) - min(same) < 1e-3 * max(1.0, abs(same[0])), offset
    assert abs(score(10, 0) - score(10, 9)) > 1e-2  # and it does depend on the offset


def test_the_query_heads_of_a_group_see_identical_keys_and_values():
    model = tiny_model()
    with torch.no_grad(), capture(model) as st:
        model(torch.tensor([[1, 5, 9, 2, 7]]))
    k, v = st["layers.1.attention.k"][0], st["layers.1.attention.v"][0]  # [head, pos, d_head]
    k_kv = st["layers.1.attention.k_kv"][0]  # [kv_head, pos, d_head]
    group = TINY.n_heads // TINY.n_kv_heads
    for head in range(TINY.n_heads):
        assert torch.equal(k[head], k_kv[head // group])
        assert torch.equal(v[head], st["layers.1.attention.v_kv"][0][head // group])
    assert torch.equal(k[0], k[1]) and not torch.equal(k[1], k[2])  # same group / other group
    q = st["layers.1.attention.q"][0]
    assert not torch.equal(q[0], q[1])  # each query head has its own queries


def test_the_gguf_row_permutation_on_a_literal_matrix():
    # one head of width 4 (pairs (0, 2) and (1, 3) in the half-split layout); rows hold their own index
    half_split = np.array([[0, 0], [1, 1], [2, 2], [3, 3]])
    in_the_file = np.array([[0, 0], [2, 2], [1, 1], [3, 3]])  # llama.cpp writes pair partners side by side
    assert np.array_equal(permute_rows(half_split, 1), in_the_file)
    assert np.array_equal(unpermute_rows(in_the_file, 1), half_split)
    two_heads = np.arange(8)[:, None]
    assert unpermute_rows(two_heads, 2)[:, 0].tolist() == [0, 2, 1, 3, 4, 6, 5, 7]
    w = torch.randn(9 * 64, 5)
    assert torch.equal(unpermute_rows(permute_rows(w, 9), 9), w)
    with pytest.raises(ValueError, match="heads of an even width"):
        unpermute_rows(np.zeros((6, 2)), 2)


def test_causal_mask_with_a_cache_lines_new_queries_up_with_their_positions():
    mask = causal_mask(2, 3)[0, 0]  # new queries at positions 3 and 4, keys 0…4
    assert mask.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]
    assert causal_mask(1, 7) is None


def test_cached_forward_equals_the_full_forward_position_by_position():
    model = tiny_model(1)
    ids = torch.tensor([[3, 14, 15, 9, 26, 5, 35]])
    with torch.no_grad():
        full = model(ids)  # [1, pos, vocab]
        cache = KVCache(TINY.n_layers)
        first = model(ids[:, :4], cache)
        rest = [model(ids[:, i:i + 1], cache) for i in range(4, 7)]
    stepped = torch.cat([first, *rest], dim=1)
    assert cache.length == 7 and cache.keys[0].shape == (1, TINY.n_kv_heads, 7, TINY.d_head)
    assert (stepped - full).abs().max().item() < 1e-5


def test_cached_greedy_generation_equals_uncached_on_smollm2():
    pytest.importorskip("gguf")
    from transformer_core.analysis.generation import generate, greedy_ids
    from transformer_core.models.gguf_weights import SmolLM2Unavailable
    from transformer_core.models.smollm2 import encode

    try:
        ids, _, _ = encode("The three primary colours are")
    except SmolLM2Unavailable as err:
        pytest.skip(str(err))
    cached = greedy_ids(ids, 12, use_cache=True)
    uncached = greedy_ids(ids, 12, use_cache=False)
    assert cached.tolist() == uncached.tolist()
    out = generate("The three primary colours are", 12)
    assert out["new_ids"] == cached.tolist()[:len(out["new_ids"])]
    assert len(out["steps"][0]["top"]) == 5 and out["steps"][0]["top"][0][1] == out["new_ids"][0]


def test_sampling_is_seeded_and_filters_with_top_k():
    pytest.importorskip("gguf")
    from transformer_core.analysis.generation import generate
    from transformer_core.models.gguf_weights import SmolLM2Unavailable

    try:
        a = generate("Once upon a time", 6, greedy=False, temperature=0.9, k=1, seed=3)
    except SmolLM2Unavailable as err:
        pytest.skip(str(err))
    greedy = generate("Once upon a time", 6)
    assert a["new_ids"] == greedy["new_ids"]  # top-k = 1 leaves only the argmax
    b = generate("Once upon a time", 6, greedy=False, temperature=1.5, p=0.95, seed=3)
    c = generate("Once upon a time", 6, greedy=False, temperature=1.5, p=0.95, seed=3)
    assert b["new_ids"] == c["new_ids"]
    assert all(0 < s["chosen_prob"] <= 1 for s in b["steps"])


def test_a_cache_is_rejected_past_the_longest_input():
    model = tiny_model()
    with pytest.raises(ValueError, match="at most 64 positions"):
        model(torch.zeros(1, 65, dtype=torch.long))


def test_gqa_module_runs_alone_with_rope_for():
    attention = GroupedQueryAttention(TINY)
    for p in attention.parameters():
        torch.nn.init.normal_(p, std=0.2)
    x = torch.randn(1, 6, TINY.d_model)
    cos, sin = rope_for(TINY, 0, 6)
    with torch.no_grad(), capture(attention) as st:
        out = attention(x, x, cos, sin)
    assert out.shape == (1, 6, TINY.d_model)
    assert st["weights"].shape == (1, TINY.n_heads, 6, 6)
    assert torch.all(st["weights"][0].triu(1) == 0)


def test_the_unwatched_grouped_path_gives_the_watched_paths_numbers():
    """Without a capture or an intervention the attention stacks a group's query heads against their one key/value
    head instead of repeating keys and values (grouped_attention): the same logits, with and without a cache."""
    model = tiny_model(2)
    ids = torch.tensor([[4, 8, 15, 16, 23, 42, 7]])
    with torch.no_grad():
        fast = model(ids)
        with capture(model, only=lambda name: False):
            watched = model(ids)
        cache = KVCache(TINY.n_layers)
        stepped = torch.cat([model(ids[:, :3], cache)] + [model(ids[:, i:i + 1], cache) for i in range(3, 7)], 1)
    assert (fast - watched).abs().max().item() < 1e-5
    assert (stepped - watched).abs().max().item() < 1e-5
    # a grouped path that paired query heads with the wrong key/value head would not agree
    from transformer_core.nn.gqa import grouped_attention

    q, k_kv, v_kv = torch.randn(1, 4, 5, 8), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)
    mask = causal_mask(5, 0)
    right = grouped_attention(q, k_kv, v_kv, mask)
    wrong = grouped_attention(q, k_kv.flip(1), v_kv.flip(1), mask)
    expected = torch.softmax((q @ k_kv.repeat_interleave(2, 1).transpose(-2, -1) / 8 ** 0.5).masked_fill(~mask, -1e30),
                             -1) @ v_kv.repeat_interleave(2, 1)
    assert (right - expected).abs().max().item() < 1e-5 and (wrong - expected).abs().max().item() > 1e-2
