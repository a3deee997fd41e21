"""Mean ablation on any decoder: each head's context is replaced by its mean over every position of the reference
prompts run on the same model (pooled, a named variant: ``analysis/ablation/next_token.py``). Checked against Hugging
Face eager on a tiny random Llama and Qwen2 (tests/tiny_checkpoints.py): the means are the mean of ``o_proj``'s input
slice over the reference prompts (a forward pre-hook), and the ablated probabilities are Hugging Face's with that
slice replaced by the mean."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tiny_checkpoints import TEXT


def _hf_means(hf, tokenizer, prompts, d_head: int) -> dict[int, torch.Tensor]:
    layers = hf.model.layers
    sums, count = {i: 0 for i in range(len(layers))}, 0

    def grab(i):
        def hook(_module, args):
            sums[i] = sums[i] + args[0][0].double().sum(0)  # [n_heads · d_head], summed over positions
        return hook

    handles = [layer.self_attn.o_proj.register_forward_pre_hook(grab(i)) for i, layer in enumerate(layers)]
    try:
        with torch.no_grad():
            for prompt in prompts:
                ids = tokenizer.encode(prompt).ids
                hf(torch.tensor([ids]), use_cache=False)
                count += len(ids)
    finally:
        for h in handles:
            h.remove()
    return {i: (s / count).reshape(-1, d_head) for i, s in sums.items()}  # [head, d_head]


@pytest.mark.parametrize("arch", ["llama", "qwen2"])  # a BOS added by the tokenizer (llama) and none (qwen2)
def test_mean_ablation_on_a_local_decoder_is_hugging_faces_with_the_slice_replaced(arch, tiny_checkpoints):
    from tokenizers import Tokenizer

    from transformer_core import models
    from transformer_core.analysis.ablation.next_token import REFERENCE_SETS, ablation_effect, decoder_reference

    folder, hf = tiny_checkpoints[arch]
    face = models.load(folder)
    d_head = face.config.d_head
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    expected = _hf_means(hf, tokenizer, REFERENCE_SETS["ioi"], d_head)
    ours = decoder_reference("ioi", face)
    for layer, mean in expected.items():
        np.testing.assert_allclose(ours.pooled[layer].double().numpy(), mean.numpy(), atol=1e-5, err_msg=str(layer))

    layer, head = 1, 2
    out = ablation_effect(TEXT, [(layer, head)], mode="mean", targets=(" Mary", " John"), face=face)

    def put_mean(_module, args):
        x = args[0].clone()
        x[..., head * d_head:(head + 1) * d_head] = expected[layer][head].to(x.dtype)
        return (x,)

    handle = hf.model.layers[layer].self_attn.o_proj.register_forward_pre_hook(put_mean)
    try:
        with torch.no_grad():
            logits = hf(torch.tensor([tokenizer.encode(TEXT).ids]), use_cache=False).logits[0, -1]
    finally:
        handle.remove()
    probs = torch.softmax(logits.double(), -1)
    mary, john = (tokenizer.encode(t, add_special_tokens=False).ids[0] for t in (" Mary", " John"))
    assert out["ablated"]["targets"][" Mary"] == pytest.approx(float(probs[mary]), abs=1e-6)
    assert out["ablated"]["targets"][" John"] == pytest.approx(float(probs[john]), abs=1e-6)
    # the ablation changed something: the intact numbers differ
    assert abs(out["intact"]["targets"][" Mary"] - out["ablated"]["targets"][" Mary"]) > 1e-6
