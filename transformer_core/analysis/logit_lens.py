"""The logit lens: read the residual stream after each block as if it were the last one.

nostalgebraist, "interpreting GPT: the logit lens" (LessWrong, 2020): put the residual stream after block ``i``
through the model's final norm and its unembedding, and see which next token it already favours. The last row is the
model's own prediction. Rows here follow TransformerLens's ``accumulated_resid``: row 0 is the embeddings (before
block 0), row ``i`` the stream after block ``i − 1``, row ``n_layers`` the stream the final norm reads.

A decoder here is anything with ``final_norm`` (an RMSNorm) and a tied or separate unembedding ``W_U``
(:func:`unembedding`); SmolLM2 (:mod:`transformer_core.models.smollm2`) is one.

Shape legend: row (n_layers + 1), pos, d_model, vocab.
"""
from __future__ import annotations

import numpy as np
import torch


def unembedding(model) -> torch.Tensor:
    """``W_U`` as ``[vocab, d_model]`` (logits = normed residual @ W_U.T): the model's ``unembed`` weight when it has
    one, else its tied embedding (SmolLM2 ties them)."""
    unembed = getattr(model, "unembed", None)
    if isinstance(unembed, torch.nn.Linear):
        return unembed.weight
    return model.embed.weight


def logit_lens(model, stream: np.ndarray, target: int | None = None, chunk: int = 4) -> dict:
    """The logit lens of one sentence's residual stream ``stream`` (float32 ``[row, pos, d_model]``, rows as the
    module docstring says).

    Returns ``{"top_ids": int [row, pos], "top_probs": float32 [row, pos]`` (the most probable next token of each
    row and position, softmax at T = 1), ``"target_prob": float32 [row, pos]`` (the probability of ``target``;
    absent when ``target`` is None)``}``. The logits of ``chunk`` rows are held at a time (``chunk × pos × vocab``
    floats), never all of them.

    Raises:
        ValueError: ``stream`` is not ``[row, pos, d_model]``, or ``target`` is outside the vocabulary.
    """
    w_u = unembedding(model)
    vocab, d_model = w_u.shape
    if stream.ndim != 3 or stream.shape[2] != d_model or 0 in stream.shape:
        raise ValueError(f"stream must be [row, pos, {d_model}], got shape {tuple(stream.shape)}")
    if target is not None and not 0 <= int(target) < vocab:
        raise ValueError(f"target must be a token id in [0, {vocab - 1}], got {target!r}")
    rows, n = stream.shape[:2]
    top_ids = np.zeros((rows, n), np.int64)
    top_probs = np.zeros((rows, n), np.float32)
    target_prob = np.zeros((rows, n), np.float32)
    with torch.no_grad():
        for start in range(0, rows, chunk):
            x = torch.from_numpy(np.array(stream[start:start + chunk], np.float32))  # [chunk, pos, d_model]
            probs = torch.softmax(model.final_norm(x) @ w_u.T, dim=-1)  # [chunk, pos, vocab]
            best = probs.max(dim=-1)
            top_ids[start:start + chunk] = best.indices.numpy()
            top_probs[start:start + chunk] = best.values.numpy()
            if target is not None:
                target_prob[start:start + chunk] = probs[..., int(target)].numpy()
    out = {"top_ids": top_ids, "top_probs": top_probs}
    if target is not None:
        out["target_prob"] = target_prob
    return out
