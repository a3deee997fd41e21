"""The real-model pages compute once per input and serve every click from it: SmolLM2's forward calls are counted
(forward pre-hooks on the shared model) on /llm and the modern tabs, and what a click is served from the cache equals
a fresh computation.

- /llm: a prompt is one whole-model run; a layer, head or stage click none. A layer's stages are its block recomputed
  from the residual stream the prompt's run kept, equal to capturing that layer inside a whole run.
- The KV-cache tab on SmolLM2: 32 cached steps and one check run on the first visit (33 calls), none on a step
  change; the timing of 32 tokens without the cache only on request.
- Long inputs: one batched run per slider step (the window and the window with sinks), equal to separate runs.
- A capture of one layer's stage leaves the other layers on the fast path (``watched(points)``), with the same
  numbers.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from apptest_utils import new_app

IOI = "When Mary and John went to the store, John gave a drink to"


@pytest.fixture(scope="module")
def smollm2(smollm2_or_skip):  # conftest: loaded once, or the module skipped with the pip command
    from transformer_core.models.smollm2 import load_smollm2

    return load_smollm2()[0]


class Calls:
    """Whole-model forward calls and single-block calls of the shared SmolLM2 while the block is open."""

    def __init__(self, model):
        self.model, self.forwards, self.blocks = model, 0, 0

    def __enter__(self):
        self._handles = [self.model.register_forward_pre_hook(self._forward)]
        self._handles += [layer.register_forward_pre_hook(self._block) for layer in self.model.layers]
        return self

    def _forward(self, *_):
        self.forwards += 1

    def _block(self, *_):
        self.blocks += 1

    def __exit__(self, *exc):
        for handle in self._handles:
            handle.remove()


def run(at):
    at.run(timeout=300)
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_a_prompt_is_one_run_and_layer_head_and_stage_clicks_run_no_model(smollm2):
    at = new_app(prompt=IOI)
    at.switch_page("pages/llm.py")
    with Calls(smollm2) as calls:
        run(at)
    assert calls.forwards == 1  # the summary; layer 0's stages come from its residual stream
    # the whole run's 30 blocks, then layer 0 alone and the layers of the heads "What the heads write" names
    assert calls.blocks >= 30 + 1
    for key, value in [("llm_layer", 7), ("llm_head", 4), ("llm_stage", "scores"), ("llm_layer", 29)]:
        with Calls(smollm2) as calls:
            at.session_state[key] = value
            run(at)
        assert calls.forwards == 0, key
        assert calls.blocks <= (1 if key == "llm_layer" else 0), key  # a layer seen before is cached
    with Calls(smollm2) as calls:  # back to a layer seen before: from the cache, no block at all
        at.session_state["llm_layer"] = 7
        run(at)
    assert (calls.forwards, calls.blocks) == (0, 0)


def test_a_layer_served_from_the_residual_equals_capturing_it_in_a_whole_run(smollm2):
    from transformer_core.models.smollm2_trace import block_stages, run_smollm2
    from ui.llm import compute
    from ui.shell import cache

    cache.clear_all()
    for layer in (0, 11, 29):
        served = compute.layer_trace(compute.DEFAULT, IOI, layer)
        prefix = f"layers.{layer}.attention."
        whole, _prediction = run_smollm2(IOI, only=lambda n: n.startswith(prefix))
        assert set(served.stages) == {prefix + s for s in compute.SHOWN_STAGES}
        for name, array in served.stages.items():
            np.testing.assert_allclose(array, whole.stages[name], atol=1e-6, rtol=0, err_msg=name)
        assert served.tokens == whole.tokens
    # the comparison can fail: the block fed the residual entering the layer before gives other weights
    stream = compute.summary(compute.DEFAULT, IOI)["stream"]
    wrong = block_stages(stream[10], 11, only=lambda n: n.endswith("weights"))["layers.11.attention.weights"]
    right = compute.layer_trace(compute.DEFAULT, IOI, 11).stage("weights", 11)
    assert np.abs(wrong - right).max() > 1e-2


def test_block_stages_rejects_a_bad_layer_or_residual(smollm2):
    from transformer_core.models.smollm2_trace import block_stages

    with pytest.raises(ValueError, match="layer"):
        block_stages(np.zeros((3, 576), np.float32), 30)
    with pytest.raises(ValueError, match="residual"):
        block_stages(np.zeros((3, 64), np.float32), 0)


def test_the_kv_cache_tab_generates_once_and_a_step_runs_nothing(smollm2):
    at = new_app(section="KV cache", model="smollm2")
    at.switch_page("pages/modern.py")
    with Calls(smollm2) as calls:
        run(at)
    assert calls.forwards == 32 + 1  # 32 cached steps, one check run over the whole sequence
    assert not any("a token with the cache" in c.value for c in at.caption)  # the slow timing waits for a click
    assert any("Generated and checked on this server in" in c.value for c in at.caption)
    with Calls(smollm2) as calls:
        at.select_slider(key="modern_step").set_value(17)
        run(at)
    assert calls.forwards == 0
    from transformer_core.models.smollm2 import encode
    from ui.modern import compute as modern

    n_prompt = len(encode(modern.SMOLLM2_PROMPT)[0])
    assert {m.label: m.value for m in at.metric}["Cached key rows (per layer)"] == str(n_prompt + 16)
    with Calls(smollm2) as calls:
        at.button(key="modern_time_smollm2").click()
        run(at)
    assert calls.forwards == 32 + 32  # timed: 32 steps with the cache, 32 whole-sequence runs without
    assert any("a token with the cache" in c.value and "Same tokens both ways: yes" in c.value for c in at.caption)


def test_a_long_inputs_step_is_one_batched_run_equal_to_separate_runs(smollm2):
    from transformer_core.analysis import long_inputs
    from ui.modern import compute as modern

    at = new_app(section="Long inputs", window="6", sinks="1")
    at.switch_page("pages/modern.py")
    run(at)
    for window, sinks in [(5, 2), (4, 0)]:
        with Calls(smollm2) as calls:
            at.session_state["modern_window"], at.session_state["modern_sinks"] = window, sinks
            run(at)
        assert calls.forwards == 1, (window, sinks)
    ids = list(modern.long_input_ids()["ids"])
    batched = long_inputs.windowed_batch_logits(smollm2, ids, [(5, 0), (5, 2)])
    for row, (window, sinks) in zip(batched, [(5, 0), (5, 2)]):
        alone = long_inputs.windowed_last_logits(smollm2, ids, window, sinks)
        np.testing.assert_allclose(row.numpy(), alone.numpy(), atol=1e-4, rtol=0)
    assert (batched[0] - batched[1]).abs().max() > 0.1  # the two masks really differ


def test_capturing_one_layer_leaves_the_others_on_the_fast_path(smollm2):
    from transformer_core.nn import gqa
    from transformer_core.nn.hooks import capture, watched

    ids = torch.tensor([[504, 3575, 282, 4649, 314]])
    with torch.no_grad():
        plain = smollm2(ids)
    fast = []
    original = gqa.grouped_attention

    def counted(*args, **kwargs):
        fast.append(1)
        return original(*args, **kwargs)

    gqa.grouped_attention = counted
    try:
        with torch.no_grad(), capture(smollm2, only=lambda n: n == "layers.5.attention.weights") as stages:
            assert watched(smollm2.layers[5].attention._inner_points)
            assert not watched(smollm2.layers[4].attention._inner_points)
            captured = smollm2(ids)
    finally:
        gqa.grouped_attention = original
    assert len(fast) == 29  # every layer but 5
    assert stages["layers.5.attention.weights"].shape == (1, 9, 5, 5)
    np.testing.assert_allclose(captured.numpy(), plain.numpy(), atol=1e-4, rtol=0)


def test_streamed_generation_is_generate_step_by_step(smollm2):
    from transformer_core.analysis.generation import generate, stream
    from transformer_core.models.smollm2 import encode

    ids = encode(IOI)[0]
    for kwargs in ({"greedy": True}, {"greedy": False, "temperature": 0.7, "k": 20, "p": 0.9, "seed": 7}):
        whole = generate(IOI, 6, **kwargs)
        with Calls(smollm2) as calls:
            steps = stream(ids, 6, **kwargs)
            first = next(steps)  # the first token comes after one forward call, before the others run
            assert calls.forwards == 1
            rest = list(steps)
        assert [first, *rest] == whole["steps"], kwargs
        assert calls.forwards == 6  # with the KV cache: one call per new token
    with pytest.raises(ValueError, match="no tokens"):
        next(stream([], 3))


def test_generate_on_the_page_streams_and_tables_the_same_steps(smollm2):
    from transformer_core.analysis.generation import generate

    at = new_app(prompt=IOI, n_new="4")
    at.switch_page("pages/llm.py")
    run(at)
    with Calls(smollm2) as calls:
        at.button(key="llm_gen_button").click()
        run(at)
    assert calls.forwards == 4  # the prompt encoded once (the summary's ids), 4 cached steps, no other run
    table = next(d.value for d in at.dataframe if "#1" in d.value.columns)
    assert list(table.iloc[:, 1]) == generate(IOI, 4)["labels"]


def test_ranking_runs_one_forward_per_layer_from_the_cached_residual(smollm2):
    from transformer_core.analysis.ablation.next_token import rank_heads

    with Calls(smollm2) as calls:
        ranked = rank_heads(IOI)
    assert calls.forwards == 1 + 30  # the intact run (its residuals kept), then one batched pass per layer
    # each layer's pass runs only the layers from the ablated one on: 30 + Σ (30 − layer) blocks in all
    assert calls.blocks == 30 + sum(30 - layer for layer in range(30))
    assert ranked["probs"].shape == (30, 9, 2)
