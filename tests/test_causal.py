"""The trained causal model: committed weights and hash, reproducible training, head scores, parity with
``F.scaled_dot_product_attention(is_causal=True)``."""
from __future__ import annotations

import shutil

import pytest
import torch
import torch.nn.functional as F

from transformer_core.models import causal
from transformer_core.models.causal import (CausalUnavailable, build_causal_model, head_scores, load_causal_model,
                                     parse_tokens, repeated_tokens, run_causal, training_log)
from transformer_core.nn.hooks import capture


def test_load_interface():
    model = load_causal_model()
    assert model.vocab_size == 64
    ids = torch.tensor([[1, 2, 3, 4, 1, 2, 3, 4]])
    logits = model(ids)
    assert logits.shape == (1, 8, 64)
    with capture(model) as stages:
        model(ids)
    for i in range(2):
        for stage in ("q", "k", "v", "scores", "masked_scores", "weights", "context"):
            assert f"layers.{i}.attention.{stage}" in stages
    assert stages["layers.0.attention.weights"].shape == (1, 4, 8, 8)  # [batch, head, query_pos, key_pos]


def test_committed_hash_and_size():
    assert causal.sha256_of(causal.WEIGHTS_PATH) == causal.WEIGHTS_SHA256 == training_log()["sha256"]
    assert causal.WEIGHTS_PATH.stat().st_size < 5_000_000


def test_corrupt_file_clear_error_rest_works(tmp_path):
    bad = tmp_path / "causal_model.safetensors"
    shutil.copy(causal.WEIGHTS_PATH, bad)
    data = bytearray(bad.read_bytes())
    data[-1] ^= 0xFF
    bad.write_bytes(bytes(data))
    with pytest.raises(CausalUnavailable, match="not the committed ones.*SHA-256.*expected"):
        build_causal_model(bad)
    with pytest.raises(CausalUnavailable, match="missing"):
        build_causal_model(tmp_path / "nope.safetensors")
    # the rest of the package still works
    from transformer_core import EncoderConfig, run_toy

    assert run_toy(["the cat sat"], EncoderConfig(d_model=16, n_heads=2, n_layers=1)).n_heads == 2
    assert load_causal_model().vocab_size == 64


def test_training_reproduces_committed_losses():
    """A few steps from the seed give the committed losses: bit-identical on this machine (1 thread,
    deterministic algorithms); 1e-5 relative is allowed for another CPU / BLAS."""
    from transformer_core.models.train_causal import train

    committed = training_log()["losses"]
    result = train(steps=8, progress=False, checkpoint_steps=(0,))
    assert result["losses"] == pytest.approx(committed[:8], rel=1e-5, abs=0)
    # and step 0 is exactly the committed initial checkpoint
    initial = build_causal_model(step=0)
    for name, value in initial.state_dict().items():
        torch.testing.assert_close(result["checkpoints"][0][name], value, rtol=0, atol=0)


def test_global_rng_untouched():
    state = torch.get_rng_state()
    causal.CausalLM()
    assert torch.equal(state, torch.get_rng_state())


def test_head_scores_held_out():
    """Held-out sequences (seed 12345, period 24, length 48): L0H0 is a previous-token head, layer 1 has
    induction heads, and the repeats are predicted far better than the first period."""
    scores = head_scores(load_causal_model(), seed=777)
    assert scores["previous_token"][0][0] >= 0.5
    assert max(scores["induction"][1]) >= 0.5
    assert sum(s >= 0.5 for s in scores["induction"][1]) >= 3
    assert scores["loss"]["repeat"] < 1.0 < 4.0 < scores["loss"]["first"]
    # before training there is nothing of the kind
    untrained = head_scores(load_causal_model(step=0), seed=777)
    assert max(max(r) for r in untrained["induction"]) < 0.2
    assert max(max(r) for r in untrained["previous_token"]) < 0.2


def test_induction_score_definition():
    w = torch.zeros(1, 1, 8, 8)
    period = 3
    for q in range(period, 8):
        w[0, 0, q, q - period + 1] = 1.0
    assert causal.induction_score(w, period).item() == 1.0
    w2 = torch.zeros(1, 1, 5, 5)
    for q in range(1, 5):
        w2[0, 0, q, q - 1] = 1.0
    assert causal.previous_token_score(w2).item() == 1.0


def _reference_forward(model, ids):
    """The model written with plain torch: F.scaled_dot_product_attention(is_causal=True) per layer.
    Weights come from SDPA on an identity value matrix (SDPA(Q, K, I) = softmax(QKᵀ/√d + causal))."""
    n = ids.size(1)
    x = model.token_embedding.weight[ids] + model.position_embedding.weight[:n]
    weights = []
    for layer in model.layers:
        a = layer.attention
        split = lambda t: t.view(1, n, a.n_heads, a.d_k).transpose(1, 2)  # noqa: E731
        q = split(x @ a.W_Q.weight.T + a.W_Q.bias)
        k = split(x @ a.W_K.weight.T + a.W_K.bias)
        v = split(x @ a.W_V.weight.T + a.W_V.bias)
        eye = torch.eye(n).expand(1, a.n_heads, n, n)
        weights.append(F.scaled_dot_product_attention(q, k, eye, is_causal=True))
        ctx = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out = ctx.transpose(1, 2).reshape(1, n, -1) @ a.W_O.weight.T + a.W_O.bias
        x = F.layer_norm(x + out, (x.size(-1),), a.norm.weight, a.norm.bias, a.norm.eps)
    return x @ model.unembed.weight.T + model.unembed.bias, weights


def test_parity_with_sdpa_is_causal():
    model = load_causal_model()
    ids = repeated_tokens(1, 12, 36, 64, torch.Generator().manual_seed(5))
    with torch.no_grad(), capture(model) as stages:
        logits = model(ids)
        ref_logits, ref_weights = _reference_forward(model, ids)
    for i, ref in enumerate(ref_weights):
        torch.testing.assert_close(stages[f"layers.{i}.attention.weights"], ref, rtol=0, atol=1e-5)
    torch.testing.assert_close(logits, ref_logits, rtol=0, atol=1e-4)


def test_mask_off_changes_loss():
    ids = repeated_tokens(1, 16, 32, 64, torch.Generator().manual_seed(9))[0].tolist()
    on, off = run_causal(ids), run_causal(ids, causal=False)
    assert on.mask is not None and on.mask[0, 0].sum() == 32 * 33 // 2 and off.mask is None
    assert abs(float(on.stages["token_loss"].mean()) - float(off.stages["token_loss"].mean())) > 0.1
    w = off.stages["layers.1.attention.weights"]
    assert float(w[0, :, :, :].sum() - w[0].diagonal(0, -2, -1).sum()) > 0  # weight above the diagonal exists
    assert float(sum(w[0, :, q, q + 1:].sum() for q in range(31))) > 0.1


def test_parse_tokens():
    assert parse_tokens("5 17, 3") == [5, 17, 3]
    with pytest.raises(ValueError, match="'64' is not a token id"):
        parse_tokens("1 64")
    with pytest.raises(ValueError, match="'cat'"):
        parse_tokens("cat")
