"""Direct logit attribution: how much each head, each MLP and the embeddings write the answer directly.

Before the final norm, a LLaMA decoder's residual stream at a position is a plain sum: the token embedding, every
head's output and every MLP's output (each block adds them; no biases). Head ``h`` of layer ``l`` writes
``context_h · W_O[:, h·d_head:(h+1)·d_head]ᵀ`` (its slice of the output projection). The final RMSNorm divides the
stream by its root mean square, then multiplies by its weight ``g``; with that scale *frozen* from the clean run, the
logit of token ``t`` is linear in the parts:

    logit_t = Σ_parts (part / rms) · (g ⊙ W_U[t])

so each part's share is one dot product and the shares sum to the logit exactly (to float rounding). For a difference
``target − contrast`` use ``W_U[target] − W_U[contrast]``. This is TransformerLens's ``logit_attrs`` on
``decompose_resid``/``stack_head_results`` with ``apply_ln_to_stack`` (the norm's scale taken from the final
residual), for one position; Elhage et al., "A Mathematical Framework for Transformer Circuits" (2021), call it the
direct path. It leaves out what a part does through later layers (patching, :mod:`.patching`, sees that).

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


def direct_logit_attribution(model, parts: dict, target: int, contrast: int | None = None) -> dict:
    """Every part's direct contribution to the logit of ``target`` at one position (minus ``contrast``'s, when
    given), with the final norm's scale frozen from the clean run.

    ``parts``: float32 arrays at that position: ``"embed"`` ``[d_model]``, ``"heads"`` ``[layer, head, d_model]``
    (:func:`head_outputs`), ``"mlps"`` ``[layer, d_model]`` (each feed-forward's output before its addition), and
    ``"final"`` ``[d_model]`` (the residual stream the final norm reads: the sum of the others).

    Returns ``{"heads": float64 [layer, head], "mlps": float64 [layer], "embed": float, "total": the sum of all
    parts, "logit_diff": the model's own logit (difference) from ``final``, "scale": 1 / rms(final)}``; ``total``
    equals ``logit_diff`` to float rounding (tests/test_logit_attribution.py checks it against Hugging Face).

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
        logit_diff = float(final @ direction * scale)
    return {"heads": heads, "mlps": mlps, "embed": embed, "total": float(heads.sum() + mlps.sum() + embed),
            "logit_diff": logit_diff, "scale": scale}
