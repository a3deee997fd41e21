"""Activation patching (denoising): which heads and which residual-stream positions carry the answer.

Run a clean prompt and a corrupted one of the same length (for the indirect-object prompt, the names swapped). Then
rerun the corrupted prompt with one activation taken from the clean run, and measure how much of the clean logit
difference ``target − contrast`` comes back:

    score = (LD_patched − LD_corrupt) / (LD_clean − LD_corrupt)

1 means that activation alone restores the clean answer; 0 that it changes nothing. As in Wang et al., "Interpretability
in the Wild" (2022), §3, and TransformerLens's ``patching.get_act_patch_attn_head_out_all_pos`` (a head's output at
every position, which here is its ``context``: the output is the context through the head's own slice of W_O) and
``get_act_patch_resid_pre`` (the residual stream entering a layer, one position at a time).

Both run batched: one pass per layer, every copy in the batch patching one head (or one position), started at that
layer from the corrupted run's residual stream (the layers before it are the corrupted run's own). Only the patched
block runs hooked. The model is any LLaMA-style decoder with ``layers``, ``config`` and ``forward(..., start_layer,
residual)`` (:class:`~transformer_core.models.smollm2.SmolLM2`).

Shape legend: layer, head, pos, d_head, d_model, vocab.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ..nn.gqa import rope_for
from ..nn.hooks import capture, intervene


def _runs(model, clean: list[int], corrupt: list[int], target: int, contrast: int) -> dict:
    """The clean run's contexts and residual stream, the corrupted run's residual stream, and both logit differences."""
    if not clean or len(clean) != len(corrupt):
        raise ValueError(f"the clean and corrupted prompts must have the same number of tokens, got {len(clean)} and "
                         f"{len(corrupt)}")
    n_layers = model.config.n_layers
    entering = ["embeddings"] + [f"layers.{i}.feed_forward.output" for i in range(n_layers - 1)]
    wanted = set(entering) | {f"layers.{i}.attention.context" for i in range(n_layers)}
    out = {}
    with torch.no_grad():
        for name, ids in (("clean", clean), ("corrupt", corrupt)):
            with capture(model, only=lambda n: n in wanted) as stages:
                logits = model(torch.tensor([ids]), last_only=True)[0, -1]
            out[f"ld_{name}"] = float(logits[target] - logits[contrast])
            out[f"{name}_stream"] = [stages[n] for n in entering]  # [1, pos, d_model] each
            out[f"{name}_context"] = [stages[f"layers.{i}.attention.context"] for i in range(n_layers)]
    return out


def _score(logits: torch.Tensor, target: int, contrast: int, runs: dict) -> np.ndarray:
    denominator = runs["ld_clean"] - runs["ld_corrupt"]
    ld = (logits[:, target] - logits[:, contrast]).double().numpy()
    return (ld - runs["ld_corrupt"]) / denominator if denominator != 0 else np.full(ld.shape, np.nan)


def patch_heads(model, clean: list[int], corrupt: list[int], target: int, contrast: int,
                progress: Callable[[int, int], None] | None = None) -> dict:
    """Patch each head's output (its context at every position) from the clean run into the corrupted run.

    Returns ``{"heads": float64 [layer, head] normalised scores, "ld_clean", "ld_corrupt": logit differences}``.
    ``progress(done, total)`` after each layer. A score is NaN when the two runs' logit differences are equal.

    Raises:
        ValueError: prompts of different lengths (or empty).
    """
    runs = _runs(model, clean, corrupt, target, contrast)
    config = model.config
    n_layers, n_heads, n = config.n_layers, config.n_heads, len(clean)
    cos, sin = rope_for(config, 0, n)
    scores = np.zeros((n_layers, n_heads))
    x = torch.tensor([corrupt]).expand(n_heads, -1)
    copy_patches = torch.eye(n_heads, dtype=torch.bool)[:, :, None, None]  # [copy, head, 1, 1]: copy h patches h
    for layer in range(n_layers):
        clean_context = runs["clean_context"][layer]  # [1, head, pos, d_head]

        def patched(context: torch.Tensor, clean_context=clean_context) -> torch.Tensor:
            return torch.where(copy_patches, clean_context.expand_as(context), context)

        with torch.no_grad():
            with intervene(model, {f"layers.{layer}.attention.context": patched}):
                after = model.layers[layer](runs["corrupt_stream"][layer].expand(n_heads, -1, -1), cos, sin, None,
                                            layer)
            logits = model(x, start_layer=layer + 1, residual=after, last_only=True)[:, -1]  # [copy, vocab]
        scores[layer] = _score(logits, target, contrast, runs)
        if progress is not None:
            progress(layer + 1, n_layers)
    return {"heads": scores, "ld_clean": runs["ld_clean"], "ld_corrupt": runs["ld_corrupt"]}


def patch_residual(model, clean: list[int], corrupt: list[int], target: int, contrast: int,
                   progress: Callable[[int, int], None] | None = None) -> dict:
    """Patch the residual stream entering each layer, one position at a time, from the clean run into the corrupted
    run (TransformerLens's ``resid_pre``).

    Returns ``{"positions": float64 [layer, pos] normalised scores, "ld_clean", "ld_corrupt"}``.

    Raises:
        ValueError: prompts of different lengths (or empty).
    """
    runs = _runs(model, clean, corrupt, target, contrast)
    n_layers, n = model.config.n_layers, len(clean)
    scores = np.zeros((n_layers, n))
    x = torch.tensor([corrupt]).expand(n, -1)
    one_position = torch.eye(n, dtype=torch.bool)[:, :, None]  # [copy, pos, 1]: copy p takes position p
    for layer in range(n_layers):
        mixed = torch.where(one_position, runs["clean_stream"][layer], runs["corrupt_stream"][layer])  # [copy, pos, d]
        with torch.no_grad():
            logits = model(x, start_layer=layer, residual=mixed, last_only=True)[:, -1]
        scores[layer] = _score(logits, target, contrast, runs)
        if progress is not None:
            progress(layer + 1, n_layers)
    return {"positions": scores, "ld_clean": runs["ld_clean"], "ld_corrupt": runs["ld_corrupt"]}
