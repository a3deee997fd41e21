"""Direct logit attribution: how much each head, each MLP and the embeddings write the answer directly.

Before the final norm, a LLaMA decoder's residual stream at a position is a plain sum: the token embedding, every
head's output, every MLP's output and, in a checkpoint whose config says ``attention_bias=True`` (Llama's option; it
puts a bias ``b_O`` on each layer's output projection), every layer's ``b_O``. Head ``h`` of layer ``l`` writes
``context_h · W_O[:, h·d_head:(h+1)·d_head]ᵀ`` (its slice of the output projection); ``b_O`` is added once per layer
after the heads are summed, so it belongs to no head. The final RMSNorm divides the stream by its root mean square,
then multiplies by its weight ``g``; with that scale *frozen* from the clean run, the logit of token ``t`` is linear in
the parts:

    logit_t = Σ_parts (part / rms) · (g ⊙ W_U[t])

so each part's share is one dot product and the shares sum to the logit exactly (to float rounding). For a difference
``target − contrast`` use ``W_U[target] − W_U[contrast]``. This is TransformerLens's ``logit_attrs`` on
``decompose_resid``/``stack_head_results`` with ``apply_ln_to_stack`` (the norm's scale taken from the final
residual), for one position; Elhage et al., "A Mathematical Framework for Transformer Circuits" (2021), call it the
direct path. As in TransformerLens, a head's result leaves ``b_O`` out ("attn_out for a layer is the sum of head
results plus b_O", ``ActivationCache.compute_head_results``) and the biases are one term of their own, summed over
the layers (``get_full_resid_decomposition``'s ``"bias"`` row, ``HookedTransformer.accumulated_bias``), not split over
the heads. It leaves out what a part does through later layers (patching, :mod:`.patching`, sees that).

Shape legend: layer, head, d_head, d_model, vocab.
"""
from __future__ import annotations

import numpy as np
import torch

from .logit_lens import unembedding


def head_outputs(model, contexts: np.ndarray) -> np.ndarray:
    """Each head's output written into the residual stream at one position: float32 ``[layer, head, d_model]`` from
    the heads' contexts ``[layer, head, d_head]`` (the attention-weighted values, the ``context`` stage) through
    their slices of each layer's W_O.

    Raises:
        ValueError: ``contexts`` is not ``[n_layers, n_heads, d_head]``.
    """
    config = model.config
    if contexts.shape != (config.n_layers, config.n_heads, config.d_head):
        raise ValueError(f"contexts must be [{config.n_layers}, {config.n_heads}, {config.d_head}], "
                         f"got shape {tuple(contexts.shape)}")
    d = config.d_head
    out = np.zeros((config.n_layers, config.n_heads, config.d_model), np.float32)
    with torch.no_grad():
        for layer in range(config.n_layers):
            w_o = model.layers[layer].attention.W_O.weight  # [d_model, n_heads · d_head]
            per_head = w_o.view(config.d_model, config.n_heads, d).permute(1, 2, 0)  # [head, d_head, d_model]
            ctx = torch.from_numpy(np.array(contexts[layer], np.float32))  # [head, d_head]
            out[layer] = torch.einsum("hd,hdm->hm", ctx, per_head).numpy()
    return out


def output_biases(model) -> np.ndarray | None:
    """Each layer's attention output bias ``b_O``, float64 ``[layer, d_model]`` (what every position's residual stream
    receives from it, whatever the input; zeros for a layer without one), or ``None`` when no layer's W_O has a
    bias."""
    linears = [layer.attention.W_O for layer in model.layers]
    if all(w.bias is None for w in linears):
        return None
    with torch.no_grad():
        return np.stack([np.zeros(w.out_features) if w.bias is None else w.bias.double().numpy() for w in linears])


def direct_logit_attribution(model, parts: dict, target: int, contrast: int | None = None) -> dict:
    """Every part's direct contribution to the logit of ``target`` at one position (minus ``contrast``'s, when
    given), with the final norm's scale frozen from the clean run.

    ``parts``: float32 arrays at that position: ``"embed"`` ``[d_model]``, ``"heads"`` ``[layer, head, d_model]``
    (:func:`head_outputs`), ``"mlps"`` ``[layer, d_model]`` (each feed-forward's output before its addition), and
    ``"final"`` ``[d_model]`` (the residual stream the final norm reads: the sum of the others).

    Returns ``{"heads": float64 [layer, head], "mlps": float64 [layer], "embed": float, "bias": the output
    projections' biases' share, one term (``None`` when the model has none), "bias_layers": float64 [layer], that
    term layer by layer (:func:`output_biases`; ``None`` likewise), "total": the sum of all parts,
    "logit_diff": the model's own logit (difference) from ``final``, "scale": 1 / rms(final)}``; ``total`` equals
    ``logit_diff`` to float rounding (tests/test_logit_attribution.py checks it against Hugging Face, and
    tests/test_logit_attribution_bias.py with biases).

    Raises:
        ValueError: a token id outside the vocabulary.
    """
    w_u = unembedding(model)
    vocab = w_u.shape[0]
    for token in (target, contrast):
        if token is not None and not 0 <= int(token) < vocab:
            raise ValueError(f"token ids must be in [0, {vocab - 1}], got {token!r}")
    norm = model.final_norm
    with torch.no_grad():
        direction = w_u[int(target)].double()
        if contrast is not None:
            direction = direction - w_u[int(contrast)].double()
        direction = direction * norm.weight.double()  # the norm's elementwise weight, folded into the direction
        final = torch.tensor(np.asarray(parts["final"]), dtype=torch.float64)
        scale = float(1.0 / torch.sqrt(final.pow(2).mean() + norm.eps))  # frozen: 1 / rms of the clean stream

        def attr(x) -> np.ndarray:
            return (torch.tensor(np.asarray(x), dtype=torch.float64) @ direction * scale).numpy()

        heads, mlps, embed = attr(parts["heads"]), attr(parts["mlps"]), float(attr(parts["embed"]))
        b_o = output_biases(model)
        bias_layers = None if b_o is None else attr(b_o)
        bias = None if b_o is None else float(bias_layers.sum())
        logit_diff = float(final @ direction * scale)
    return {"heads": heads, "mlps": mlps, "embed": embed, "bias": bias, "bias_layers": bias_layers,
            "total": float(heads.sum() + mlps.sum() + embed + (bias or 0.0)), "logit_diff": logit_diff, "scale": scale}
