"""RMSNorm and rotary position embeddings (RoPE), as LLaMA-style decoders use them.

Sources:
- Zhang & Sennrich, "Root Mean Square Layer Normalization" (2019), Eq. 4: ``x / RMS(x) · g`` with
  ``RMS(x) = sqrt(mean(x²) + ε)``; no mean is subtracted and there is no bias.
- Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding" (2021), §3.2–3.4: each pair of
  features of a query or key is turned by the angle ``pos · θ_i`` with ``θ_i = base^(−2i/d_head)``, so
  ``q_m · k_n`` depends on ``m − n`` only (Eq. 16).
- RoPE scaling, as Hugging Face's ``rope_scaling`` / ``rope_parameters`` names it: ``linear`` divides every
  θ_i by ``factor`` (Chen et al., "Extending Context Window of Large Language Models via Positional
  Interpolation" (2023), Eq. 4); ``llama3`` divides only the slow frequencies (wavelength above
  ``original_max_position_embeddings / low_freq_factor``) by ``factor``, keeps the fast ones (wavelength below
  ``… / high_freq_factor``) and blends between them (Meta's Llama 3.1 reference code, ``apply_scaling``; the
  same in transformers' ``_compute_llama3_parameters``). Other kinds are refused by name.
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


SCALINGS = ("linear", "llama3")  # the RoPE scaling kinds we compute (besides none)


def scaled_inverse_frequencies(d_head: int, base: float, scaling: dict | None = None) -> torch.Tensor:
    """:func:`inverse_frequencies` after a RoPE ``scaling`` (``None`` or ``{"rope_type": "default"}``: unchanged),
    float32 ``[d_head/2]``.

    ``scaling``: ``{"rope_type": "linear", "factor": f}`` or ``{"rope_type": "llama3", "factor",
    "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}`` (the keys of a Hugging Face
    config; ``"type"`` is read as ``"rope_type"``).

    Raises:
        ValueError: another kind of scaling (the message names the supported ones) or a missing/bad key.
    """
    inv = inverse_frequencies(d_head, base)
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind in (None, "default"):
        return inv
    if kind not in SCALINGS:
        raise ValueError(f"RoPE scaling {kind!r} is not supported: only {', '.join(SCALINGS)} (or none)")
    try:
        factor = float(scaling["factor"])
        if kind == "linear":
            return inv / factor
        low, high = float(scaling["low_freq_factor"]), float(scaling["high_freq_factor"])
        context = float(scaling["original_max_position_embeddings"])
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"RoPE scaling {kind!r} lacks a number: {err}") from None
    wavelength = 2 * torch.pi / inv  # positions per turn of each pair
    slow = wavelength > context / low  # long wavelengths: interpolated (divided by factor)
    fast = wavelength < context / high  # short wavelengths: kept
    smooth = (context / wavelength - low) / (high - low)  # 0 at the slow edge → 1 at the fast edge
    blended = (1 - smooth) * inv / factor + smooth * inv
    return torch.where(slow, inv / factor, torch.where(fast, inv, blended))


def rope_tables(positions: torch.Tensor, d_head: int, base: float,
                scaling: dict | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The cos and sin tables for ``positions`` (int ``[pos]``): both float32 ``[pos, d_head]``.

    Column ``i`` and column ``i + d_head/2`` hold the same angle ``pos · θ_i`` (the half-split layout), so
    :func:`apply_rotary` turns the pair (x_i, x_{i + d_head/2}) by that angle. ``scaling``: see
    :func:`scaled_inverse_frequencies`.
    """
    inv = scaled_inverse_frequencies(d_head, base, scaling)  # [d_head/2]
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
