"""The online-softmax lab: FlashAttention's tiled softmax (:func:`~transformer_core.nn.online_softmax.online_attention`)
on one random head, every tile recorded, checked against the plain computation and against the same tiles without
the rescaling step (the mistake the rescale corrects).

Shape legend: query_pos, key_pos, d_head (8 here), tile.
"""
from __future__ import annotations

import numpy as np
import torch

from ..nn.masks import causal_mask, sliding_window_mask
from ..nn.online_softmax import online_attention, plain_attention, plain_peak_bytes

D_HEAD = 8
MASKS = ("none", "causal", "window", "sink")  # window: 4 keys; sink: the same plus the first token


def lab_mask(kind: str, n: int) -> torch.Tensor | None:
    """The lab's mask ``[query_pos, key_pos]`` (True = may attend) of ``kind`` (one of :data:`MASKS`), None for none.

    Raises:
        KeyError: an unknown kind.
    """
    return {"none": lambda: None, "causal": lambda: causal_mask(n), "window": lambda: sliding_window_mask(n, window=4),
            "sink": lambda: sliding_window_mask(n, window=4, sinks=1)}[kind]()


def online_demo(n: int, block_q: int, block_k: int, mask_kind: str, seed: int = 0) -> dict:
    """One random head of ``n`` positions (q and k ~ N(0, 2²), v ~ N(0, 1), from a local generator seeded with
    ``seed``) through the online softmax in tiles of ``block_q`` queries × ``block_k`` keys.

    ``{"scores" [query_pos, key_pos] (q·k/√8), "visible", "steps": [{"rows", "cols", "skipped", "m", "l",
    "rescale", "output", "q_tile", "k_tile"}] per tile, "final", "plain" [query_pos, d_head], "diff" (online vs
    plain), "diff_wrong" (without rescaling vs plain), "peak_tiled", "peak_plain" (bytes), "computed", "skipped"
    (tiles)}``.
    """
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(n, D_HEAD, generator=g) * s for s in (2.0, 2.0, 1.0))
    mask = lab_mask(mask_kind, n)
    result = online_attention(q, k, v, mask, block_q=block_q, block_k=block_k, record=True)
    plain = plain_attention(q, k, v, mask)
    wrong = online_attention(q, k, v, mask, block_q=block_q, block_k=block_k, correct=False).output
    scores = (q @ k.T / np.sqrt(D_HEAD)).numpy()
    return {"scores": scores, "visible": np.ones((n, n), bool) if mask is None else mask.numpy(),
            "steps": [{"rows": s.rows, "cols": s.cols, "skipped": s.skipped, "m": s.m.numpy(), "l": s.l.numpy(),
                       "rescale": s.rescale.numpy(), "output": s.output.numpy(), "q_tile": s.q_tile,
                       "k_tile": s.k_tile} for s in result.steps],
            "final": result.output.numpy(), "plain": plain.numpy(),
            "diff": float((result.output - plain).abs().max()), "diff_wrong": float((wrong - plain).abs().max()),
            "peak_tiled": result.peak_bytes, "peak_plain": plain_peak_bytes(n, n),
            "computed": result.tiles_computed, "skipped": result.tiles_skipped}
