"""capture(): stage names, shapes, dtypes, no side effects, block scoping, thread privacy."""
import math
import threading

import pytest
import torch

from transformer_core import Encoder, EncoderConfig, MultiHeadAttention, capture
from transformer_core.nn import hooks
from transformer_core.nn.masks import causal_mask

ATTENTION_STAGES = {"q", "k", "v", "scores", "masked_scores", "weights", "context", "concat", "projected", "output"}
B, LQ, LK, D, H = 2, 3, 5, 12, 3
DK = D // H


def _mha(dropout=0.0, seed=0):
    torch.manual_seed(seed)
    return MultiHeadAttention(D, H, dropout)


def _inputs(seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, LQ, D, generator=g), torch.randn(B, LK, D, generator=g)


def _mask():
    mask = causal_mask(LQ, LK)[None, None].repeat(B, 1, 1, 1)  # [batch, 1, query_pos, key_pos]
    mask[1, 0, :, 4] = False
    return mask


def test_mha_stage_names_and_shapes_eval():
    mha = _mha(dropout=0.3).eval()
    query, memory = _inputs()
    with torch.no_grad(), capture(mha) as stages:
        out, weights = mha(query, memory, memory, _mask())
    assert set(stages) == ATTENTION_STAGES
    expected_shapes = {
        "q": (B, H, LQ, DK), "k": (B, H, LK, DK), "v": (B, H, LK, DK),
        "scores": (B, H, LQ, LK), "masked_scores": (B, H, LQ, LK), "weights": (B, H, LQ, LK),
        "context": (B, H, LQ, DK), "concat": (B, LQ, D), "projected": (B, LQ, D), "output": (B, LQ, D),
    }
    assert {name: tuple(t.shape) for name, t in stages.items()} == expected_shapes
    assert torch.equal(stages["output"], out)
    assert torch.equal(stages["weights"], weights)


def test_captured_stages_have_the_documented_meaning():
    mha = _mha().eval()
    query, memory = _inputs()
    mask = _mask()
    with torch.no_grad(), capture(mha) as s:
        out, _ = mha(query, memory, memory, mask)
    q, k, v = s["q"], s["k"], s["v"]
    assert torch.allclose(q, mha.W_Q(query).detach().view(B, LQ, H, DK).transpose(1, 2), atol=1e-6)
    assert torch.allclose(k, mha.W_K(memory).detach().view(B, LK, H, DK).transpose(1, 2), atol=1e-6)
    assert torch.allclose(s["scores"], q @ k.transpose(-2, -1) / math.sqrt(DK), atol=1e-5)
    assert torch.equal(s["masked_scores"][~mask.expand(B, H, LQ, LK)],
                       torch.full((int((~mask.expand(B, H, LQ, LK)).sum()),), float("-inf")))
    assert torch.equal(s["masked_scores"][mask.expand(B, H, LQ, LK)], s["scores"][mask.expand(B, H, LQ, LK)])
    assert torch.allclose(s["weights"], torch.softmax(s["masked_scores"], -1), atol=1e-6)
    assert torch.allclose(s["context"], s["weights"] @ v, atol=1e-5)
    assert torch.equal(s["concat"], s["context"].transpose(1, 2).reshape(B, LQ, D))
    with torch.no_grad():
        assert torch.allclose(s["projected"], mha.W_O(s["concat"]), atol=1e-6)
        assert torch.allclose(s["output"], mha.norm(query + s["projected"]), atol=1e-5)


def test_dropped_weights_only_in_training_with_dropout():
    query, memory = _inputs()
    for dropout, training, expect in [(0.5, True, True), (0.5, False, False), (0.0, True, False)]:
        mha = _mha(dropout).train(training)
        with torch.no_grad(), capture(mha) as stages:
            mha(query, memory, memory)
        assert ("dropped_weights" in stages) is expect, (dropout, training)
        assert set(stages) - {"dropped_weights"} == ATTENTION_STAGES


def test_dropped_weights_are_dropout_of_weights_and_feed_the_context():
    mha = _mha(0.5).train()
    query, memory = _inputs()
    torch.manual_seed(123)
    with torch.no_grad(), capture(mha) as s:
        mha(query, memory, memory)
    weights, dropped = s["weights"], s["dropped_weights"]
    # weights (before dropout) still sum to 1 per row; dropped ones do not
    assert torch.allclose(weights.sum(-1), torch.ones(B, H, LQ), atol=1e-5)
    assert (dropped.sum(-1) - 1).abs().max() > 0.1
    # each dropped weight is 0 or weight / (1 - p)
    kept = dropped != 0
    assert 0 < kept.sum() < kept.numel()
    assert torch.allclose(dropped[kept], weights[kept] / 0.5, atol=1e-6)
    # the context uses the dropped weights
    assert torch.allclose(s["context"], dropped @ s["v"], atol=1e-5)
    assert not torch.allclose(s["context"], weights @ s["v"], atol=1e-3)


def test_encoder_stage_names_are_prefixed():
    config = EncoderConfig(d_model=16, n_heads=4, d_ff=32, n_layers=2)
    model = Encoder(config).eval()
    x = torch.randn(2, 4, 16)
    with torch.no_grad(), capture(model) as stages:
        out = model(x, causal_mask(4)[None, None])
    expected = {f"layers.{i}.attention.{s}" for i in range(2) for s in ATTENTION_STAGES}
    expected |= {f"layers.{i}.feed_forward.{s}" for i in range(2) for s in ("hidden", "output")}
    assert set(stages) == expected
    assert stages["layers.0.attention.weights"].shape == (2, 4, 4, 4)
    assert stages["layers.1.feed_forward.hidden"].shape == (2, 4, 32)
    assert torch.equal(stages["layers.1.feed_forward.output"], out)
    # layer 1 attention reads layer 0's output
    assert torch.equal(stages["layers.1.attention.output"],
                       model.layers[1].attention(stages["layers.0.feed_forward.output"],
                                                 stages["layers.0.feed_forward.output"],
                                                 stages["layers.0.feed_forward.output"],
                                                 causal_mask(4)[None, None])[0].detach())


def test_capture_of_a_submodule_uses_its_own_names():
    model = Encoder(EncoderConfig(d_model=8, n_heads=2, d_ff=16, n_layers=2)).eval()
    with torch.no_grad(), capture(model.layers[1].feed_forward) as stages:
        model(torch.randn(1, 3, 8))
    assert set(stages) == {"hidden", "output"}


def test_outputs_identical_with_and_without_capture():
    mha = _mha().eval()
    query, memory = _inputs()
    mask = _mask()
    out_plain, w_plain = mha(query, memory, memory, mask)
    with capture(mha):
        out_cap, w_cap = mha(query, memory, memory, mask)
    assert torch.equal(out_plain, out_cap) and torch.equal(w_plain, w_cap)
    model = Encoder(EncoderConfig(d_model=16, n_heads=4, d_ff=32, n_layers=2)).eval()
    x = torch.randn(2, 4, 16)
    plain = model(x)
    with capture(model):
        captured = model(x)
    assert torch.equal(plain, captured)
    # gradients still flow through a captured forward pass
    assert captured.requires_grad


def test_captured_tensors_are_float32_cpu_detached():
    mha = _mha().eval()
    query, memory = _inputs()
    query.requires_grad_(True)
    with capture(mha) as stages:
        out, _ = mha(query, memory, memory)
    assert out.requires_grad
    for name, t in stages.items():
        assert t.dtype == torch.float32, name
        assert t.device.type == "cpu", name
        assert not t.requires_grad, name
        assert t.grad_fn is None, name
    # copies, not views of live tensors: changing the store does not touch the output
    stages["output"].zero_()
    assert not torch.equal(out.detach(), stages["output"])


def test_float64_module_is_captured_as_float32():
    mha = _mha().eval().double()
    query, memory = _inputs()
    with torch.no_grad(), capture(mha) as stages:
        mha(query.double(), memory.double(), memory.double())
    assert all(t.dtype == torch.float32 for t in stages.values())


def test_nothing_recorded_after_block_exits():
    mha = _mha().eval()
    query, memory = _inputs()
    with torch.no_grad(), capture(mha) as stages:
        mha(query, memory, memory)
    first = {name: t.clone() for name, t in stages.items()}
    with torch.no_grad():
        mha(memory, memory, memory)  # different input, after the block
    assert set(stages) == set(first)
    assert all(torch.equal(stages[n], first[n]) for n in first)
    assert hooks._ACTIVE.get() == ()


def test_nothing_recorded_after_exception_inside_block():
    mha = _mha().eval()
    query, memory = _inputs()
    with pytest.raises(RuntimeError, match="boom"):
        with capture(mha) as stages:
            raise RuntimeError("boom")
    assert hooks._ACTIVE.get() == ()
    mha(query, memory, memory)
    assert stages == {}
    # an exception from the forward pass itself (a mask that does not broadcast: after Q, K, V and the scores are
    # recorded) also ends the capture
    with pytest.raises(RuntimeError):
        with capture(mha) as stages2:
            mha(query, memory, memory, torch.ones(3, 3, dtype=torch.bool))
    assert hooks._ACTIVE.get() == ()
    n_before = len(stages2)
    mha(query, memory, memory)
    assert len(stages2) == n_before


def test_second_forward_in_block_overwrites():
    mha = _mha().eval()
    query, memory = _inputs()
    with torch.no_grad(), capture(mha) as stages:
        mha(query, memory, memory)
        out2, _ = mha(memory, memory, memory)
    assert torch.equal(stages["output"], out2)
    assert stages["q"].shape == (B, H, LK, DK)


def test_nested_captures_both_record():
    model = Encoder(EncoderConfig(d_model=8, n_heads=2, d_ff=16, n_layers=1)).eval()
    with torch.no_grad(), capture(model) as outer, capture(model.layers[0].attention) as inner:
        model(torch.randn(1, 3, 8))
    assert torch.equal(outer["layers.0.attention.weights"], inner["weights"])
    assert set(inner) == ATTENTION_STAGES


def test_threads_capturing_the_same_module_see_only_their_own_tensors():
    mha = _mha().eval()
    n_threads, rounds = 6, 5
    inputs = [torch.randn(1, 4 + i % 3, D, generator=torch.Generator().manual_seed(100 + i)) for i in range(n_threads)]
    with torch.no_grad():
        expected = [mha(x, x, x) for x in inputs]
    barrier = threading.Barrier(n_threads)
    results: dict[int, list] = {i: [] for i in range(n_threads)}
    errors: list[BaseException] = []

    def work(i):
        try:
            for _ in range(rounds):
                barrier.wait()
                with torch.no_grad(), capture(mha) as stages:
                    for _ in range(3):  # several forward calls, interleaving with other threads
                        out, _ = mha(inputs[i], inputs[i], inputs[i])
                results[i].append((out, dict(stages)))
        except BaseException as exc:  # noqa: BLE001 — reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    for i in range(n_threads):
        assert len(results[i]) == rounds
        exp_out, exp_weights = expected[i]
        for out, stages in results[i]:
            assert set(stages) == ATTENTION_STAGES
            assert torch.equal(out, exp_out)
            assert torch.equal(stages["output"], exp_out)
            assert torch.equal(stages["weights"], exp_weights)
            assert stages["q"].shape[2] == inputs[i].shape[1]
