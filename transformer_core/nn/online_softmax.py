"""FlashAttention's online softmax: one attention head computed tile by tile, never holding the whole score matrix.

Sources:
- Milakov & Gimelshein, "Online normalizer calculation for softmax" (2018), Algorithm 3: a running maximum ``m``
  and a running sum ``l`` of ``exp(score − m)``; when a new maximum arrives, the sum so far is multiplied by
  ``exp(m_old − m_new)`` (the *correction*) so every term is measured against the same maximum.
- Dao et al., "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness" (2022), Algorithm 1,
  and Dao, "FlashAttention-2" (2023), Algorithm 1: the same correction applied to the running weighted sum of the
  values, so the output of a query tile is finished after one pass over the key tiles; tiles that the mask blocks
  entirely are skipped.

The tiles are ``block_q`` query rows × ``block_k`` key columns; the last tile of either axis may be narrower when
the block does not divide the length. A query row with no visible key gets an output of 0, as
:func:`transformer_core.nn.attention.masked_softmax` gives it.

Shape legend: query_pos, key_pos, d_head (one head; no batch axis).
Mask convention: ``True`` = may attend (see :mod:`transformer_core.nn.masks`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from .config import whole
from .masks import require_bool

FLOAT32_BYTES = 4


@dataclass(frozen=True)
class TileStep:
    """What one tile changed: query rows ``rows`` (start, stop) against key columns ``cols`` (start, stop).

    ``skipped``: the mask blocks every cell of the tile, so it was not computed. ``m``, ``l`` ``[rows]``: the
    running maximum and sum after this tile (−inf and 0 while a row has seen no visible key). ``output``
    ``[rows, d_head]``: the partial output ``acc / l`` after this tile (0 where ``l`` is 0), i.e. the attention
    output these rows would have if the keys so far were all the keys. ``rescale`` ``[rows]``: the correction
    ``exp(m_old − m_new)`` applied to the old sum and accumulator (1 where the maximum did not change).
    """

    q_tile: int
    k_tile: int
    rows: tuple[int, int]
    cols: tuple[int, int]
    skipped: bool
    m: torch.Tensor
    l: torch.Tensor  # noqa: E741  (the paper's name)
    rescale: torch.Tensor
    output: torch.Tensor


@dataclass
class OnlineResult:
    """The tiled computation's output ``[query_pos, d_head]`` (float32), its steps (when recorded, in the order
    computed: query tile by query tile, key tiles left to right) and the bytes of working memory it held at most
    (:func:`tiled_peak_bytes`)."""

    output: torch.Tensor
    steps: list[TileStep] = field(default_factory=list)
    peak_bytes: int = 0
    tiles_computed: int = 0
    tiles_skipped: int = 0


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
           block_q: int, block_k: int) -> None:
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor) or x.dim() != 2:
            raise ValueError(f"{name} must be a 2-D tensor [pos, d_head] (one head), got "
                             f"{list(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
    if q.shape[1] != k.shape[1] or k.shape[0] != v.shape[0]:
        raise ValueError(f"q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)}: q and k need the same d_head, "
                         "k and v the same number of positions")
    for name, block in (("block_q", block_q), ("block_k", block_k)):
        if whole(block) is None or block < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {block!r}")
    require_bool(mask)
    if mask is not None and tuple(mask.shape) != (q.shape[0], k.shape[0]):
        raise ValueError(f"mask must be [query_pos, key_pos] = {[q.shape[0], k.shape[0]]}, got {list(mask.shape)}")


def plain_peak_bytes(n_query: int, n_key: int) -> int:
    """Working memory of the plain computation beyond q, k, v and the output: the score matrix and the weight
    matrix, both ``[query_pos, key_pos]`` float32, held together while softmax turns one into the other."""
    return 2 * n_query * n_key * FLOAT32_BYTES


def tiled_peak_bytes(n_query: int, n_key: int, d_head: int, block_q: int, block_k: int) -> int:
    """Working memory of the tiled computation beyond q, k, v and the output: one tile of scores and one of
    ``exp(score − m)`` (``block_q × block_k`` each), the running ``m``, ``l`` (``block_q`` each) and the accumulator
    ``block_q × d_head``, all float32; blocks wider than the input count as the input's length."""
    bq, bk = min(block_q, max(n_query, 1)), min(block_k, max(n_key, 1))
    return (2 * bq * bk + 2 * bq + bq * d_head) * FLOAT32_BYTES


def online_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None, *,
                     block_q: int = 16, block_k: int = 16, record: bool = False,
                     correct: bool = True) -> OnlineResult:
    """softmax(q kᵀ / √d_head) v, computed in tiles with a running max and sum per query row.

    Args:
        q: ``[query_pos, d_head]``; k: ``[key_pos, d_head]``; v: ``[key_pos, d_v]``.
        mask: bool ``[query_pos, key_pos]``, ``True`` = may attend; ``None`` = every key visible.
        block_q, block_k: tile height and width (need not divide the lengths).
        record: keep a :class:`TileStep` for every tile (for the page; costs memory).
        correct: apply the correction ``exp(m_old − m_new)`` (default). ``False`` drops it, which is wrong whenever
            a later tile raises a row's maximum: it is there to show that the correction is what makes it exact.

    Returns:
        :class:`OnlineResult`; ``output`` equals :func:`transformer_core.nn.attention.scaled_dot_product_attention`'s
        context for the same inputs up to float32 rounding.

    Raises:
        ValueError: shapes that do not fit, or a block below 1. TypeError: ``mask`` is not ``torch.bool``.
    """
    _check(q, k, v, mask, block_q, block_k)
    q, k, v = q.float(), k.float(), v.float()
    n_query, n_key, d_v = q.shape[0], k.shape[0], v.shape[1]
    scale = 1.0 / math.sqrt(q.shape[1])
    result = OnlineResult(output=torch.zeros(n_query, d_v),
                          peak_bytes=tiled_peak_bytes(n_query, n_key, q.shape[1], block_q, block_k))
    for qi, r0 in enumerate(range(0, n_query, block_q)):
        r1 = min(r0 + block_q, n_query)
        m = torch.full((r1 - r0,), float("-inf"))  # running maximum of each row's visible scores
        l = torch.zeros(r1 - r0)  # noqa: E741  running sum of exp(score − m)
        acc = torch.zeros(r1 - r0, d_v)  # running sum of exp(score − m) · v
        for ki, c0 in enumerate(range(0, n_key, block_k)):
            c1 = min(c0 + block_k, n_key)
            tile_mask = None if mask is None else mask[r0:r1, c0:c1]
            if tile_mask is not None and not bool(tile_mask.any()):
                result.tiles_skipped += 1
                if record:
                    result.steps.append(TileStep(qi, ki, (r0, r1), (c0, c1), True, m.clone(), l.clone(),
                                                 torch.ones(r1 - r0), _partial(acc, l)))
                continue
            result.tiles_computed += 1
            s = (q[r0:r1] @ k[c0:c1].T) * scale  # [block_q, block_k] scores of this tile only
            if tile_mask is not None:
                s = s.masked_fill(~tile_mask, float("-inf"))
            m_new = torch.maximum(m, s.max(dim=1).values)
            # a row that has seen no visible key keeps m = −inf: measure against 0 there so no −inf − −inf = NaN
            base = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - base[:, None])  # exp(−inf) = 0 for blocked cells
            rescale = torch.exp(m - base) if correct else torch.ones_like(m)  # exp(−inf) = 0: nothing to rescale
            l = rescale * l + p.sum(dim=1)  # noqa: E741
            acc = rescale[:, None] * acc + p @ v[c0:c1]
            m = m_new
            if record:
                result.steps.append(TileStep(qi, ki, (r0, r1), (c0, c1), False, m.clone(), l.clone(),
                                             rescale.clone(), _partial(acc, l)))
        result.output[r0:r1] = _partial(acc, l)
    return result


def _partial(acc: torch.Tensor, l: torch.Tensor) -> torch.Tensor:  # noqa: E741
    """``acc / l`` row by row, 0 for a row whose sum is 0 (no visible key yet)."""
    safe = torch.where(l > 0, l, torch.ones_like(l))
    return torch.where((l > 0)[:, None], acc / safe[:, None], torch.zeros_like(acc))


def plain_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                    mask: torch.Tensor | None = None) -> torch.Tensor:
    """The same head computed at once (the whole ``[query_pos, key_pos]`` score matrix), with the package's
    :func:`~transformer_core.nn.attention.scaled_dot_product_attention`: ``[query_pos, d_v]`` float32."""
    from .attention import scaled_dot_product_attention

    context, _weights = scaled_dot_product_attention(q[None, None], k[None, None], v[None, None],
                                                     None if mask is None else mask[None, None])
    return context[0, 0]
