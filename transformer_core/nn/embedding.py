"""Token embeddings for the toy model and sinusoidal positional encoding.

Token vectors are seeded by (seed, token text in NFC): the same token gets the same vector in
every sentence and every run, with no vocabulary to build, and canonically equivalent spellings
(``"café"`` precomposed or ``"cafe\\u0301"``) get the same vector. Positional encoding follows
"Attention Is All You Need" §3.5:
``PE[pos, 2i] = sin(pos / 10000^(2i/d_model))``, ``PE[pos, 2i+1] = cos(...)``.
Shape legend: batch, pos, d_model.
"""
from __future__ import annotations

import hashlib
import math
import unicodedata

import torch

from ..text.tokenize import PAD


def token_vector(token: str, d_model: int, seed: int) -> torch.Tensor:
    """A fixed N(0, 1) vector ``[d_model]`` for ``token`` (zeros for ``[PAD]``), from a local
    ``torch.Generator`` seeded by SHA-256 of ``seed`` and the NFC form of ``token`` (UAX #15)."""
    if token == PAD:
        return torch.zeros(d_model)
    token = unicodedata.normalize("NFC", token)
    digest = hashlib.sha256(f"{seed}\x00{token}".encode("utf-8")).digest()
    generator = torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))
    return torch.randn(d_model, generator=generator)


def sinusoidal_positions(n_pos: int, d_model: int) -> torch.Tensor:
    """Sinusoidal positional encoding ``[pos, d_model]`` (§3.5); works for odd d_model too."""
    pos = torch.arange(n_pos, dtype=torch.float64)[:, None]  # [pos, 1]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.zeros(n_pos, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)[:, : d_model // 2]
    return pe.float()


def embed_tokens(tokens: tuple[tuple[str, ...], ...] | list[list[str]], d_model: int, seed: int) -> torch.Tensor:
    """Token vectors plus positions: ``[batch, pos, d_model]``.

    Token vectors are scaled by 1/√2 before adding positions so the sum keeps unit scale.
    """
    if not tokens or not tokens[0]:
        return torch.zeros(len(tokens), 0, d_model)
    vectors = torch.stack([torch.stack([token_vector(t, d_model, seed) for t in row]) for row in tokens])
    return vectors / math.sqrt(2.0) + sinusoidal_positions(vectors.shape[1], d_model)
