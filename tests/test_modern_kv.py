"""Shared key/value heads and the KV cache: grouped-query attention against torch's enable_gqa, the
parameter and byte counts, and cached generation on the trained causal model equal to recomputing every prefix."""
import pytest
import torch
import torch.nn.functional as F

from transformer_core.analysis import kv_cache_steps, shared_kv
from transformer_core.models.causal import load_causal_model
from transformer_core.nn.gqa import GroupedQueryAttention, KVCache, LlamaConfig, rope_for
from transformer_core.nn.hooks import capture


@pytest.mark.parametrize("n_heads, n_kv_heads", [(9, 3), (4, 1), (4, 4), (6, 2)])
def test_grouped_query_attention_equals_torch_enable_gqa(n_heads, n_kv_heads):
    config = LlamaConfig(vocab_size=10, d_model=16 * n_heads, n_layers=1, n_heads=n_heads, n_kv_heads=n_kv_heads,
                         d_ff=8, max_positions=32)
    g = torch.Generator().manual_seed(0)
    attn = GroupedQueryAttention(config).eval()
    with torch.no_grad():
        for p in attn.parameters():
            p.copy_(torch.randn(p.shape, generator=g) / config.d_model ** 0.5)
    x = torch.randn(2, 11, config.d_model, generator=g)
    with torch.no_grad(), capture(attn) as stages:
        attn(x, x, *rope_for(config, 0, 11))
    q, k_kv, v_kv = stages["q"], stages["k_kv"], stages["v_kv"]
    assert k_kv.shape == (2, n_kv_heads, 11, 16)
    expected = F.scaled_dot_product_attention(q, k_kv, v_kv, is_causal=True, enable_gqa=True)
    assert torch.allclose(stages["context"], expected, atol=1e-5)
    # query head h reads kv head h // group
    for h in range(n_heads):
        g = shared_kv.group_of(h, n_heads, n_kv_heads)
        assert torch.equal(stages["k"][:, h], k_kv[:, g])


def test_smollm2_kv_bytes_per_token_and_context():
    assert shared_kv.kv_bytes_per_token(30, 3, 64) == 2 * 30 * 3 * 64 * 4 == 46_080
    rows = {r["n_kv_heads"]: r for r in shared_kv.kv_choices()}
    assert sorted(rows) == [1, 3, 9] and rows[3]["is_model"]
    assert rows[3]["kv_bytes_context"] == 46_080 * 8_192 == 377_487_360
    assert rows[9]["kv_bytes_per_token"] == 3 * 46_080 and rows[1]["kv_bytes_per_token"] == 46_080 // 3
    # W_Q and W_O are 576 × 576; W_K and W_V 576 × (n_kv · 64)
    assert rows[3]["attention_params"] == 30 * (2 * 576 * 576 + 2 * 576 * 192)
    assert rows[9]["attention_params"] == 30 * 4 * 576 * 576


def test_attention_parameters_match_the_module():
    config = LlamaConfig(vocab_size=10, d_model=96, n_layers=1, n_heads=6, n_kv_heads=2, d_ff=8, max_positions=8)
    module = GroupedQueryAttention(config)
    counted = shared_kv.attention_parameters(96, 6, 2, 16)
    assert counted["total"] == sum(p.numel() for p in module.parameters())
    assert counted["W_K"] == module.W_K.weight.numel()


@pytest.mark.parametrize("args", [(0, 3, 64), (30, 3, 64.0), (30, -1, 64)])
def test_bad_sizes_raise(args):
    with pytest.raises(ValueError):
        shared_kv.kv_bytes_per_token(*args)
    with pytest.raises(ValueError):
        shared_kv.attention_parameters(576, 9, 4, 64)


@pytest.fixture(scope="module")
def causal():
    return load_causal_model()


def test_cached_generation_equals_recomputation_over_32_tokens(causal):
    prompt = [5, 17, 3, 40, 22, 9, 31, 8, 5, 17, 3, 40, 22, 9, 31, 8]
    out = kv_cache_steps.generate_causal(causal, prompt, 32)
    assert len(out["steps"]) == 32 and len(out["tokens"]) == 48
    assert out["max_abs_diff"] <= 1e-4
    # the rows grow by one per step, in every layer, and the new query is one row per head
    for i, step in enumerate(out["steps"]):
        assert step.cache_rows == [16 + i, 16 + i]
        assert step.query_shape == (1, 4, 1, 16)
        assert all(len(head) == 16 + i for layer in step.weights for head in layer)
    # greedy argmax on a repeated sequence copies it (induction)
    assert out["tokens"][16:] == (prompt * 3)[16:48]
    # the full model's greedy choices are the same
    ids = torch.tensor([out["tokens"]])
    with torch.no_grad():
        assert causal(ids)[0, 15:-1].argmax(-1).tolist() == out["tokens"][16:]


def test_a_stale_cache_is_caught(causal):
    """A cache that drops a row gives different logits: the comparison is able to fail."""
    cache = KVCache(2)
    prompt = torch.tensor([[3, 9, 27, 3, 9]])
    with torch.no_grad():
        kv_cache_steps.causal_cached_forward(causal, prompt, cache)
        for i in range(2):  # forget position 1 (keys and values), as a buggy cache might
            cache.keys[i] = torch.cat((cache.keys[i][:, :, :1], cache.keys[i][:, :, 2:]), dim=2)
            cache.values[i] = torch.cat((cache.values[i][:, :, :1], cache.values[i][:, :, 2:]), dim=2)
        stale, _ = kv_cache_steps.causal_cached_forward(causal, torch.tensor([[27]]), cache)
        full = causal(torch.tensor([[3, 9, 27, 3, 9, 27]]))[0, -1]
    assert (stale[0, -1] - full).abs().max() > 1e-2


def test_prefill_in_one_call_equals_the_full_forward(causal):
    ids = torch.tensor([[1, 2, 3, 4, 5, 6, 7]])
    with torch.no_grad():
        logits, _ = kv_cache_steps.causal_cached_forward(causal, ids, KVCache(2))
        assert torch.allclose(logits, causal(ids), atol=1e-5)


def test_generation_refuses_what_does_not_fit(causal):
    with pytest.raises(ValueError):
        kv_cache_steps.generate_causal(causal, [], 3)
    with pytest.raises(ValueError):
        kv_cache_steps.generate_causal(causal, [1] * 40, 20)


@pytest.mark.parametrize("n_kv_heads", [1, 3, 9])
def test_the_pages_gqa_check_is_small(n_kv_heads):
    assert shared_kv.gqa_vs_torch(9, n_kv_heads) < 1e-5
