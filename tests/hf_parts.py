"""Hugging Face's own decomposition of a LLaMA-family model's last position, read with forward hooks: the reference
of the direct-logit-attribution tests (SmolLM2 and the tiny local checkpoints)."""
from __future__ import annotations

import numpy as np
import torch


def hf_parts(hf, ids: list[int]) -> dict:
    """At the last position of ``ids`` in the Hugging Face decoder ``hf`` (eager): ``"embed"`` [d_model], ``"heads"``
    [layer, head, d_model] (each head's slice of o_proj's input through its columns of W_O, the bias left out),
    ``"bias"`` (o_proj's biases summed over the layers, [d_model]; None without them), ``"mlps"`` [layer, d_model],
    ``"final"`` (the final norm's input) and ``"logits"`` [vocab], all float64."""
    inner = hf.model
    seen = {}
    hooks = [inner.embed_tokens.register_forward_hook(lambda m, i, o: seen.__setitem__("embed", o)),
             inner.norm.register_forward_pre_hook(lambda m, i: seen.__setitem__("final", i[0]))]
    for layer, block in enumerate(inner.layers):
        hooks.append(block.self_attn.o_proj.register_forward_pre_hook(
            lambda m, i, layer=layer: seen.__setitem__(("concat", layer), i[0])))
        hooks.append(block.mlp.register_forward_hook(lambda m, i, o, layer=layer: seen.__setitem__(("mlp", layer), o)))
    try:
        with torch.no_grad():
            logits = hf(torch.tensor([ids]), use_cache=False).logits[0, -1]
    finally:
        for h in hooks:
            h.remove()
    n_layers, n_heads = len(inner.layers), hf.config.num_attention_heads
    d = hf.config.head_dim
    heads = np.zeros((n_layers, n_heads, hf.config.hidden_size))
    for layer, block in enumerate(inner.layers):
        concat, w = seen[("concat", layer)][0, -1].double(), block.self_attn.o_proj.weight.double()
        for h in range(n_heads):
            heads[layer, h] = (concat[h * d:(h + 1) * d] @ w[:, h * d:(h + 1) * d].T).numpy()
    biases = [block.self_attn.o_proj.bias for block in inner.layers]
    bias = None if biases[0] is None else sum(b.double().numpy() for b in biases)
    return {"embed": seen["embed"][0, -1].double().numpy(), "final": seen["final"][0, -1].double().numpy(),
            "heads": heads, "bias": bias,
            "mlps": np.stack([seen[("mlp", i)][0, -1].double().numpy() for i in range(n_layers)]),
            "logits": logits.double().numpy()}
