"""Attention masks with ONE convention for the whole package.

**Convention: ``True`` = may attend** (the query position may look at the key position),
the same as ``torch.nn.functional.scaled_dot_product_attention``. ``False`` = blocked.

The opposite conventions, and where they come from:

* ``torch.nn.MultiheadAttention`` (``attn_mask`` / ``key_padding_mask``) and seed
  ``001`` (``scores.masked_fill_(attn_mask, -1e9)``): ``True`` = blocked.
  Convert with :func:`from_true_blocked` / :func:`to_true_blocked`.
* Seed ``000`` (``scores.masked_fill(mask == 0, -inf)``): ``0`` = blocked, anything
  else = may attend. Convert with :func:`from_zero_blocked` / :func:`to_zero_blocked`.

Shape legend: batch, head, query_pos, key_pos. Every mask here broadcasts to
``[batch, head, query_pos, key_pos]``.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch


def causal_mask(n_query: int, n_key: int | None = None, *, device=None) -> torch.Tensor:
    """Causal (look-ahead) mask: a query may attend to its own and earlier key positions.

    When ``n_query < n_key`` (new tokens against a cached prefix), the **last query is
    aligned with the last key** ("bottom-right" alignment): query ``i`` sees keys
    ``0 … i + (n_key - n_query)``. This is what generation needs. ``torch``'s
    ``is_causal=True`` uses top-left alignment (``tril`` of the rectangle) instead; the
    two agree when ``n_query == n_key``.

    Args:
        n_query: number of query positions.
        n_key: number of key positions (defaults to ``n_query``).

    Returns:
        bool tensor ``[query_pos, key_pos]``, ``True`` = may attend.

    Raises:
        ValueError: a length is negative.

    Equivalent to::

        torch.ones(n_query, n_key, dtype=torch.bool).tril(diagonal=n_key - n_query)
    """
    n_key = n_query if n_key is None else n_key
    if n_query < 0 or n_key < 0:
        raise ValueError(f"lengths must be >= 0, got n_query={n_query}, n_key={n_key}")
    return torch.ones(n_query, n_key, dtype=torch.bool, device=device).tril(diagonal=n_key - n_query)


def padding_mask(lengths: Sequence[int] | torch.Tensor, max_len: int | None = None, *, device=None) -> torch.Tensor:
    """Padding mask: hide the key columns that are padding.

    Sentence ``b`` has ``lengths[b]`` real tokens followed by padding up to ``max_len``.
    Only key columns are hidden: a padding *query* row still attends to the real keys
    (its output is ignored downstream), which avoids rows with no visible key.

    Returns:
        bool tensor ``[batch, 1, 1, key_pos]``, ``True`` = may attend (a real token).

    Raises:
        ValueError: a length is negative or larger than ``max_len``.
    """
    lengths = torch.as_tensor(lengths, dtype=torch.long, device=device)
    max_len = int(lengths.max()) if max_len is None and lengths.numel() else (max_len or 0)
    if lengths.numel() and (int(lengths.min()) < 0 or int(lengths.max()) > max_len):
        raise ValueError(f"lengths must be in [0, {max_len}], got {lengths.tolist()}")
    keep = torch.arange(max_len, device=device)[None, :] < lengths[:, None]  # [batch, key_pos]
    return keep[:, None, None, :]  # [batch, 1, 1, key_pos]


def combine(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Logical AND of masks in our convention (``None`` means "no mask"); broadcasts."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    out = present[0]
    for m in present[1:]:
        out = out & m
    return out


def from_true_blocked(mask: torch.Tensor) -> torch.Tensor:
    """Convert a ``True`` = blocked mask (seed 001, ``nn.MultiheadAttention``) to ours."""
    return ~mask.bool()


def to_true_blocked(mask: torch.Tensor) -> torch.Tensor:
    """Convert our mask to ``True`` = blocked (seed 001, ``nn.MultiheadAttention``)."""
    return ~mask.bool()


def from_zero_blocked(mask: torch.Tensor) -> torch.Tensor:
    """Convert a ``0`` = blocked mask (seed 000: ``masked_fill(mask == 0, -inf)``) to ours."""
    return mask != 0


def to_zero_blocked(mask: torch.Tensor) -> torch.Tensor:
    """Convert our mask to seed 000's convention: an int tensor, ``0`` = blocked, ``1`` = may attend."""
    return mask.bool().long()


def rows_without_visible_key(mask: torch.Tensor | None) -> torch.Tensor | None:
    """Query rows where every key is blocked: bool ``[..., query_pos]`` (``None`` if no mask)."""
    if mask is None:
        return None
    return ~mask.bool().any(dim=-1)
