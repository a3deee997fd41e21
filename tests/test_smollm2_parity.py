"""Our SmolLM2 against Hugging Face's ``LlamaForCausalLM`` (eager attention, float32) read from the same GGUF file.

The same token ids go to both. Logits agree to 1e-3 and every layer's attention weights to 1e-4, at 8, 128 and 512
tokens; head ablation agrees with Hugging Face's model whose heads' 64-wide slices of ``o_proj``'s input are zeroed
by a forward pre-hook (transformers 5 ignores ``head_mask``). Each check is shown able to fail: a loader that keeps
the GGUF's row order of W_Q/W_K gives attention weights far from Hugging Face's, and ablating changes the logits.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_core.analysis.ablation.next_token import IOI_PROMPT, ablation_effect
from transformer_core.models.gguf_weights import permute_rows
from transformer_core.models.smollm2 import encode, load_smollm2
from transformer_core.nn.hooks import capture

TEXT = ("The history of the printing press begins in the fifteenth century, when Johannes Gutenberg combined "
        "movable metal type, oil-based ink and a wooden press. Within fifty years, presses in more than two "
        "hundred cities had printed millions of books, and scholars could compare the same page in Venice and "
        "in Paris. ")


def ids_of(n_tokens: int) -> list[int]:
    _, tokenizer = load_smollm2()
    ids, _, _ = encode(TEXT, tokenizer)
    return (ids * (n_tokens // len(ids) + 1))[:n_tokens]


def hf_run(hf, ids: list[int]):
    with torch.no_grad():
        out = hf(torch.tensor([ids]), output_attentions=True, use_cache=False)
    return out.logits[0], [a[0] for a in out.attentions]  # [pos, vocab], per layer [head, query_pos, key_pos]


@pytest.mark.parametrize("n_tokens", [8, 128, 512])
def test_logits_and_every_layers_attention_weights_match_hugging_face(smollm2_hf, n_tokens):
    hf, _ = smollm2_hf
    model, _ = load_smollm2()
    ids = ids_of(n_tokens)
    hf_logits, hf_weights = hf_run(hf, ids)
    with torch.no_grad(), capture(model, only=lambda n: n.endswith("attention.weights")) as stages:
        logits = model(torch.tensor([ids]))[0]
    assert logits.shape == hf_logits.shape == (n_tokens, 49152)
    assert (logits - hf_logits).abs().max().item() <= 1e-3
    assert len(hf_weights) == len(model.layers) == 30
    for i, reference in enumerate(hf_weights):
        ours = stages[f"layers.{i}.attention.weights"][0]  # [head, query_pos, key_pos]
        assert ours.shape == reference.shape == (9, n_tokens, n_tokens)
        assert (ours - reference).abs().max().item() <= 1e-4, f"layer {i}"


def test_the_ioi_sentence_predicts_mary_as_hugging_face_does(smollm2_hf):
    hf, _ = smollm2_hf
    model, tokenizer = load_smollm2()
    ids, _, _ = encode(IOI_PROMPT, tokenizer)
    with torch.no_grad():
        ours = torch.softmax(model(torch.tensor([ids]), last_only=True)[0, -1], -1)
        theirs = torch.softmax(hf(torch.tensor([ids])).logits[0, -1], -1)
    mary = tokenizer.token_to_id("ĠMary")
    assert int(ours.argmax()) == int(theirs.argmax()) == mary
    assert ours[mary].item() == pytest.approx(0.923, abs=1e-3)
    assert abs(ours[mary].item() - theirs[mary].item()) < 1e-4


def test_a_loader_that_keeps_the_gguf_row_order_gives_other_attention(smollm2_hf):
    """W_Q and W_K put back in the file's interleaved order (what a loader that forgot to un-permute would use):
    layer 0's attention weights move far beyond the parity tolerance, so the parity test catches that loader."""
    hf, _ = smollm2_hf
    model, _ = load_smollm2()
    ids = ids_of(32)
    _, hf_weights = hf_run(hf, ids)
    attention = model.layers[0].attention
    wrong_q = permute_rows(attention.W_Q.weight, 9)
    wrong_k = permute_rows(attention.W_K.weight, 3)
    assert not torch.equal(wrong_q, attention.W_Q.weight)
    with torch.no_grad(), capture(model, only=lambda n: n == "layers.0.attention.weights") as right:
        model(torch.tensor([ids]))
    # the same computation with the file's row order, on a copy of the weights (the shared model is not touched)
    normed = model.layers[0].attention_norm(model.embed(torch.tensor([ids])))
    from transformer_core.nn.attention import attention_scores, mask_scores, masked_softmax
    from transformer_core.nn.gqa import causal_mask, rope_for
    from transformer_core.nn.rotary import apply_rotary

    cos, sin = rope_for(model.config, 0, len(ids))
    q = apply_rotary((normed @ wrong_q.T).view(1, -1, 9, 64).transpose(1, 2), cos, sin)
    k = apply_rotary((normed @ wrong_k.T).view(1, -1, 3, 64).transpose(1, 2), cos, sin).repeat_interleave(3, dim=1)
    mask = causal_mask(len(ids), 0)
    wrong = masked_softmax(mask_scores(attention_scores(q, k), mask), mask)[0]
    assert (right["layers.0.attention.weights"][0] - hf_weights[0]).abs().max().item() <= 1e-4
    assert (wrong - hf_weights[0]).abs().max().item() > 1e-2


def zero_heads_pre_hook(heads_of_layer: list[int], d_head: int = 64):
    def hook(module, args):
        (x,) = args  # [batch, pos, n_heads·d_head]: the heads' contexts, concatenated, entering o_proj
        x = x.clone()
        for h in heads_of_layer:
            x[..., h * d_head:(h + 1) * d_head] = 0
        return (x,)
    return hook


def test_zero_ablation_matches_hugging_face_with_o_proj_inputs_zeroed(smollm2_hf):
    hf, tokenizer = smollm2_hf
    heads = [(0, 0), (1, 5), (1, 3), (12, 7), (29, 1)]
    result = ablation_effect(IOI_PROMPT, heads, mode="zero")
    ids = tokenizer(IOI_PROMPT)["input_ids"]
    handles = []
    try:
        for layer in sorted({layer for layer, _ in heads}):
            o_proj = hf.model.layers[layer].self_attn.o_proj
            handles.append(o_proj.register_forward_pre_hook(
                zero_heads_pre_hook([h for lay, h in heads if lay == layer])))
        with torch.no_grad():
            ablated = torch.softmax(hf(torch.tensor([ids])).logits[0, -1].double(), -1)
    finally:
        for handle in handles:
            handle.remove()
    with torch.no_grad():
        intact = torch.softmax(hf(torch.tensor([ids])).logits[0, -1].double(), -1)
    mary, john = (tokenizer(t, add_special_tokens=False)["input_ids"][0] for t in (" Mary", " John"))
    ours = result["ablated"]["targets"]
    assert ours[" Mary"] == pytest.approx(ablated[mary].item(), abs=1e-4)
    assert ours[" John"] == pytest.approx(ablated[john].item(), abs=1e-4)
    assert result["intact"]["targets"][" Mary"] == pytest.approx(intact[mary].item(), abs=1e-4)
    # ablation is seen: intact and ablated differ, on both sides
    assert abs(ablated[mary].item() - intact[mary].item()) > 0.05
    assert abs(ours[" Mary"] - result["intact"]["targets"][" Mary"]) > 0.05
    top_ids = [i for _, i, _ in result["ablated"]["top"]]
    assert top_ids == ablated.topk(5).indices.tolist()


def test_every_stage_is_captured_with_the_shapes_the_page_reads():
    from transformer_core.models.smollm2_trace import run_smollm2

    trace, prediction = run_smollm2(IOI_PROMPT)
    n = trace.lengths[0]
    assert n == 14 and trace.tokens[0][1] == "␣Mary"
    assert trace.stage("weights", 29).shape == (1, 9, n, n)
    assert trace.stage("q", 3).shape == trace.stage("k", 3).shape == trace.stage("v", 3).shape == (1, 9, n, 64)
    assert trace.stages["layers.3.attention.k_kv"].shape == (1, 3, n, 64)
    assert trace.stages["layers.3.feed_forward.hidden"].shape == (1, n, 1536)
    np.testing.assert_allclose(trace.stage("weights", 5).sum(-1), 1.0, atol=1e-5)
    assert np.all(np.triu(trace.stage("weights", 5)[0], k=1) == 0)  # causal: no weight on later tokens
    assert prediction["top"][-1][0][0] == "␣Mary"
    assert prediction["top"][-1][0][2] == pytest.approx(0.923, abs=1e-3)
