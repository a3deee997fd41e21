"""One face for every model (``transformer_core.models``): the registry's names and sizes, W_O and value norms
asked of the face (SmolLM2 and a local checkpoint included, against independent computations), head ablation
through the face against Hugging Face with the head's slice of ``o_proj``'s input zeroed."""
from __future__ import annotations

import numpy as np
import pytest
import tiny_checkpoints as tc
import torch

from transformer_core import models
from transformer_core.analysis.value_norms import output_projections, with_norms


def test_the_registry_names_each_model_and_its_sizes():
    assert models.available() == ("toy", "minilm", "causal", "smollm2")
    causal = models.load("causal", step=4000)
    assert isinstance(causal, models.Model)
    assert (causal.config.n_layers, causal.config.n_heads, causal.config.d_model, causal.config.causal) == \
        (2, 4, 64, True)
    assert models.load("minilm").unembedding() is None  # an encoder has no unembedding
    assert models.load("minilm").config.n_heads == 12
    with pytest.raises(ValueError, match="LlamaForCausalLM"):
        models.load("no/such/model")


def test_value_norms_on_smollm2_read_its_W_O(smollm2_or_skip):
    from transformer_core.models.smollm2_trace import run_smollm2

    model, _tokenizer = smollm2_or_skip
    trace, _ = run_smollm2("When Mary and John went to the store", only=lambda n: n.startswith("layers.3.attention"))
    normed = with_norms(trace, [3])
    w_o = model.layers[3].attention.W_O.weight  # [d_model, head·d_head]
    v = torch.from_numpy(trace.stages["layers.3.attention.v"][0])  # [head, key, d_head]
    f = torch.einsum("hkd,mhd->hkm", v.double(), w_o.double().view(576, 9, 64))  # f_h(x_j) = v_j^h W_O^h
    expected = torch.from_numpy(trace.stages["layers.3.attention.weights"][0]).double() * f.norm(dim=-1)[:, None, :]
    assert np.abs(normed.stages["layers.3.attention.norms"][0] - expected.numpy()).max() <= 1e-5


def test_value_norms_of_a_local_qwen3_match_hugging_faces_values_and_o_proj(tiny_checkpoints):
    """Qwen3's heads are 32 wide in a 64-wide model: W_O is [128, 64], not square."""
    folder, hf = tiny_checkpoints["qwen3"]
    face = models.load(str(folder))
    trace = face.run(tc.TEXT)
    ids = trace.settings["ids"]
    values = {}
    hook = hf.model.layers[1].self_attn.v_proj.register_forward_hook(lambda m, i, o: values.update(v=o))
    try:
        _, attentions = tc.hf_run(hf, ids)
    finally:
        hook.remove()
    v = values["v"][0].view(len(ids), 2, 32).repeat_interleave(2, dim=1).transpose(0, 1)  # [head, key, d_head]
    o_proj = hf.model.layers[1].self_attn.o_proj.weight  # [d_model, head·d_head]
    f = torch.stack([v[h] @ o_proj[:, 32 * h:32 * (h + 1)].T for h in range(4)])  # [head, key, d_model]
    expected = attentions[1] * f.norm(dim=-1)[:, None, :]  # [head, query, key]
    assert output_projections(trace)[1][0].shape == (128, 64)
    ours = with_norms(trace, [1]).stages["layers.1.attention.norms"][0]
    assert np.abs(ours - expected.numpy()).max() <= 1e-4


def test_ablating_a_head_through_the_face_is_hugging_faces_zeroed_slice(tiny_checkpoints):
    folder, hf = tiny_checkpoints["qwen2"]
    face = models.load(str(folder))
    ids = face.encode(tc.TEXT)[0]
    with torch.no_grad():
        intact = face.module(torch.tensor([ids]))[0]
        with face.intervene([(1, 2)]):
            ours = face.module(torch.tensor([ids]))[0]
    theirs, _ = tc.hf_run_without_head(hf, ids, 1, 2)
    assert (ours - theirs).abs().max().item() <= 1e-4
    assert (ours - intact).abs().max().item() > 1e-3  # the ablation changed something


def test_the_decoder_analyses_run_on_a_local_checkpoint_as_hugging_face_computes(tiny_checkpoints):
    """Ablation, ranking and generation, written for SmolLM2, take a decoder's face: the ablated probabilities
    equal Hugging Face's with the head's o_proj slice zeroed, ranking agrees with one ablation, and greedy
    generation with the KV cache gives Hugging Face's argmax continuation."""
    from transformer_core.analysis.ablation.next_token import ablation_effect, rank_heads
    from transformer_core.analysis.generation import generate

    folder, hf = tiny_checkpoints["qwen2"]
    face = models.load(str(folder))
    effect = ablation_effect(tc.TEXT, [(0, 3)], targets=(" Mary", " John"), face=face)
    ids = face.encode(tc.TEXT)[0]
    mary = face.tokenizer.token_to_id("ĠMary")
    logits, _ = tc.hf_run_without_head(hf, ids, 0, 3)
    assert effect["ablated"]["targets"][" Mary"] == pytest.approx(
        torch.softmax(logits[-1].double(), -1)[mary].item(), abs=1e-6)
    ranked = rank_heads(tc.TEXT, targets=(" Mary", " John"), face=face)
    assert ranked["probs"].shape == (2, 4, 2)
    assert ranked["probs"][0, 3, 0] == pytest.approx(effect["ablated"]["targets"][" Mary"], abs=1e-7)
    # mean ablation runs on any decoder (its reference means from the model itself): the ranking's entry for a head
    # is that head's own mean ablation; an unknown mode is refused by name
    mean_ranked = rank_heads(tc.TEXT, targets=(" Mary",), mode="mean", face=face)
    mean_one = ablation_effect(tc.TEXT, [(1, 2)], mode="mean", targets=(" Mary",), face=face)
    assert mean_ranked["probs"][1, 2, 0] == pytest.approx(mean_one["ablated"]["targets"][" Mary"], abs=1e-7)
    assert abs(mean_ranked["probs"][1, 2, 0] - ranked["probs"][1, 2, 0]) > 1e-6  # mean differs from zero
    with pytest.raises(ValueError, match="zero"):
        rank_heads(tc.TEXT, targets=(" Mary",), mode="mean_sentence", face=face)
    out = generate(tc.TEXT, 6, face=face, stop_at_eos=False)
    expected = list(ids)
    for _ in range(6):
        expected.append(int(tc.hf_run(hf, expected)[0][-1].argmax()))
    assert out["ids"] == expected
