"""ALiBi: attention with linear biases instead of position embeddings.

Source: Press, Smith & Lewis, "Train Short, Test Long: Attention with Linear Biases Enables Input Length
Extrapolation" (ICLR 2022), §3: no position is added to the word vectors; instead, head ``h`` adds
``−m_h · (i − j)`` to the score of query ``i`` for key ``j ≤ i``, a penalty growing linearly with the distance.

Slopes (§3, "the slopes ... a geometric sequence"): for ``n`` heads, ``n`` a power of two, head ``h = 1 … n`` has
``m_h = 2^(−8h/n)`` — for 8 heads 1/2, 1/4, …, 1/256; for 16 heads 1/√2, 1/2, …, 1/256.
For other ``n`` the authors' released code (which BLOOM's ``build_alibi_tensor`` follows) takes the slopes of the
largest power of two ``p < n`` and then the first ``n − p`` of the odd-numbered slopes of ``2p`` heads
(``2^(−4/p) · 2^(−8k/p)`` for k = 0, 1, …: the ones that fall between the first list's).

Keys after the query (``j > i``, only in an encoder) get ``−m_h · (j − i)`` here, the symmetric choice; a causal
model never sees them. Adding a constant to every score of a row changes no softmax weight, so BLOOM's ``+m_h · j``
and this ``−m_h · (i − j)`` give the same weights under a causal mask.

Shape legend: head, query_pos, key_pos.
"""
from __future__ import annotations

import torch

from .config import whole


def _power_of_two_slopes(n: int) -> list[float]:
    """``2^(−8h/n)`` for h = 1 … n (n a power of two)."""
    return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """The slope ``m_h`` of every head, float32 ``[head]`` (see the module docstring for the rule).

    Raises:
        ValueError: ``n_heads`` is not a whole number ≥ 1.
    """
    if whole(n_heads) is None or n_heads < 1:
        raise ValueError(f"n_heads must be a whole number >= 1, got {n_heads!r}")
    n = whole(n_heads)
    p = 1 << (n.bit_length() - 1)  # largest power of two <= n
    slopes = _power_of_two_slopes(p)
    if p < n:
        slopes += _power_of_two_slopes(2 * p)[0::2][: n - p]
    return torch.tensor(slopes, dtype=torch.float64).float()


def alibi_bias(n_query: int, n_key: int | None = None, slopes: torch.Tensor | None = None, *,
               n_heads: int | None = None) -> torch.Tensor:
    """ALiBi's bias ``−m_h · |pos(i) − j|``, float32 ``[head, query_pos, key_pos]``, to add to QKᵀ/√d.

    Query ``i`` sits at position ``i + n_key − n_query`` (the last query against the last key, as
    :func:`transformer_core.nn.masks.causal_mask` aligns them), so a new token against a cache gets the same bias
    row as in the full computation. Give ``slopes`` ``[head]`` or ``n_heads`` (then :func:`alibi_slopes`).

    Raises:
        ValueError: a negative length, or neither / both of ``slopes`` and ``n_heads``.
    """
    n_key = n_query if n_key is None else n_key
    if n_query < 0 or n_key < 0:
        raise ValueError(f"lengths must be >= 0, got n_query={n_query}, n_key={n_key}")
    if (slopes is None) == (n_heads is None):
        raise ValueError("give either slopes or n_heads")
    slopes = alibi_slopes(n_heads) if slopes is None else torch.as_tensor(slopes, dtype=torch.float32)
    query_pos = torch.arange(n_query)[:, None] + (n_key - n_query)
    distance = (query_pos - torch.arange(n_key)[None, :]).abs().float()  # [query_pos, key_pos]
    return -slopes[:, None, None] * distance[None]
