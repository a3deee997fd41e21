"""RMSNorm and rotary position embeddings (RoPE), as LLaMA-style decoders use them.

Sources:
- Zhang & Sennrich, "Root Mean Square Layer Normalization" (2019), Eq. 4: ``x / RMS(x) · g`` with
  ``RMS(x) = sqrt(mean(x²) + ε)``; no mean is subtracted and there is no bias.
- Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding" (2021), §3.2–3.4: each pair of
  features of a query or key is turned by the angle ``pos · θ_i`` with ``θ_i = base^(−2i/d_head)``, so
  ``q_m · k_n`` depends on ``m − n`` only (Eq. 16).
- Pair layout: the paper rotates neighbouring features (0, 1), (2, 3), …; Hugging Face's LLaMA pairs feature
  ``i`` with feature ``i + d_head/2`` ("half-split", its ``rotate_half``). The two are the same rotation after
  a fixed reordering of W_Q's and W_K's rows; llama.cpp's GGUF files store the rows in the interleaved order
  (:func:`transformer_core.models.gguf_weights.unpermute_rows` turns them back). We use the half-split layout.

Shape legend: batch, head, pos, d_head; d_model.
"""
from __future__ import annotations

import torch
from torch import nn


class RMSNorm(nn.Module):
    """``y = x / sqrt(mean(x²) + eps) · weight`` over the last axis, computed in float32.

    ``weight``: ``[d_model]`` (ones at construction). Input ``[..., d_model]`` → output of the same shape.

    Raises:
        ValueError: ``d_model`` is not positive or ``eps`` is not in (0, 1).
    """

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__()
        if d_model <= 0:
            raise ValueError(f"d_model must be positive, got {d_model}")
        if not 0 < eps < 1:
            raise ValueError(f"eps must be in (0, 1), got {eps!r}")
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        mean_square = x32.pow(2).mean(-1, keepdim=True)  # [..., 1]
        return self.weight * (x32 * torch.rsqrt(mean_square + self.eps)).to(x.dtype)


def inverse_frequencies(d_head: int, base: float) -> torch.Tensor:
    """``θ_i = base^(−2i/d_head)`` for i = 0 … d_head/2 − 1 (RoFormer Eq. 15), float32 ``[d_head/2]``, radians per
    position.

    Raises:
        ValueError: ``d_head`` is not a positive even number or ``base`` is not above 1.
    """
    if d_head <= 0 or d_head % 2:
        raise ValueError(f"d_head must be a positive even number for rotary embeddings, got {d_head}")
    if not base > 1:
        raise ValueError(f"rotary base must be above 1, got {base!r}")
    exponents = torch.arange(0, d_head, 2, dtype=torch.int64).float() / d_head  # 0, 2/d, 4/d, …
    return 1.0 / (base ** exponents)


def rope_tables(positions: torch.Tensor, d_head: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The cos and sin tables for ``positions`` (int ``[pos]``): both float32 ``[pos, d_head]``.

    Column ``i`` and column ``i + d_head/2`` hold the same angle ``pos · θ_i`` (the half-split layout), so
    :func:`apply_rotary` turns the pair (x_i, x_{i + d_head/2}) by that angle.
    """
    inv = inverse_frequencies(d_head, base)  # [d_head/2]
    angles = positions.float()[:, None] * inv[None, :]  # [pos, d_head/2]
    angles = torch.cat((angles, angles), dim=-1)  # [pos, d_head]: each angle twice, once per half
    return angles.cos(), angles.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """``(x1, x2) → (−x2, x1)`` where x1, x2 are the first and second halves of the last axis: the 90° turn of every
    pair (x_i, x_{i + d/2}). ``[..., d_head]`` → same shape."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate every feature pair of ``x`` ``[batch, head, pos, d_head]`` by its position's angle:
    ``x · cos + rotate_half(x) · sin`` with ``cos``, ``sin`` ``[pos, d_head]`` from :func:`rope_tables`.

    For the pair (a, b) = (x_i, x_{i+d/2}) at angle φ this gives (a cos φ − b sin φ, b cos φ + a sin φ).
    """
    return x * cos + rotate_half(x) * sin
