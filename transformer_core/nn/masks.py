"""Attention masks with ONE convention for the whole package.

**Convention: ``True`` = may attend** (the query position may look at the key position),
the same as ``torch.nn.functional.scaled_dot_product_attention``. ``False`` = blocked.

The opposite conventions, and where they come from:

* ``torch.nn.MultiheadAttention`` (``attn_mask`` / ``key_padding_mask``) and seed
  ``001`` (``scores.masked_fill_(attn_mask, -1e9)``): ``True`` = blocked.
  Convert with :func:`from_true_blocked` / :func:`to_true_blocked`.
* Seed ``000`` (``scores.masked_fill(mask == 0, -inf)``): ``0`` = blocked, anything
  else = may attend. Convert with :func:`from_zero_blocked` / :func:`to_zero_blocked`.
* An additive float mask (``0`` = may attend, ``-inf`` = blocked, added to the scores), which
  ``F.scaled_dot_product_attention`` also accepts. Convert with :func:`from_additive`.

Every function that takes a mask in our convention (the attention functions and modules too)
takes only ``torch.bool`` and raises ``TypeError`` for any other dtype (:func:`require_bool`):
``.bool()`` on an additive mask would silently invert it (0 → blocked, -inf → may attend).

Shape legend: batch, head, query_pos, key_pos. Every mask here broadcasts to
``[batch, head, query_pos, key_pos]``.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from .config import whole

# An additive mask value at or below this blocks the key: exp(-1e4) is 0 in float32 and float16.
ADDITIVE_BLOCKED = -1e4


def require_bool(mask: torch.Tensor | None, name: str = "mask") -> torch.Tensor | None:
    """Return ``mask`` if it is ``None`` or a ``torch.bool`` tensor in our convention.

    Raises:
        TypeError: any other dtype or type; the message names it and the converter to use.
    """
    if mask is None or (isinstance(mask, torch.Tensor) and mask.dtype == torch.bool):
        return mask
    found = f"dtype {mask.dtype}" if isinstance(mask, torch.Tensor) else f"type {type(mask).__name__}"
    raise TypeError(
        f"{name} must be a torch.bool tensor with True = may attend, got {found}. Convert it with "
        "transformer_core.nn.masks: from_additive(mask) for an additive float mask (0 = attend, -inf = blocked, "
        "as F.scaled_dot_product_attention adds it), from_zero_blocked(mask) for 0 = blocked (seed 000), "
        "from_true_blocked(mask) for True = blocked (nn.MultiheadAttention, seed 001)")


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
    """Logical AND of masks in our convention (``None`` means "no mask"); broadcasts.

    Raises:
        TypeError: a mask is not ``torch.bool``.
    """
    present = [require_bool(m) for m in masks if m is not None]
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
    """Convert our (bool) mask to ``True`` = blocked (seed 001, ``nn.MultiheadAttention``)."""
    return ~require_bool(mask)


def from_zero_blocked(mask: torch.Tensor) -> torch.Tensor:
    """Convert a ``0`` = blocked mask (seed 000: ``masked_fill(mask == 0, -inf)``) to ours."""
    return mask != 0


def to_zero_blocked(mask: torch.Tensor) -> torch.Tensor:
    """Convert our (bool) mask to seed 000's convention: an int tensor, ``0`` = blocked, ``1`` = may attend."""
    return require_bool(mask).long()


def from_additive(mask: torch.Tensor) -> torch.Tensor:
    """Convert an additive float mask (added to the scores, as ``F.scaled_dot_product_attention``
    reads a float ``attn_mask``) to ours: ``0`` → ``True`` (may attend); ``-inf`` or any value
    ``≤`` :data:`ADDITIVE_BLOCKED` (-1e4; e.g. seed 001's -1e9, ``torch.finfo(dtype).min``) →
    ``False`` (blocked).

    Raises:
        TypeError: ``mask`` is not a floating-point tensor.
        ValueError: a value is neither 0 nor ≤ -1e4 (a finite bias such as ALiBi's is not a
            yes/no mask: add it to the scores instead), or NaN.
    """
    if not isinstance(mask, torch.Tensor) or not mask.is_floating_point():
        found = f"dtype {mask.dtype}" if isinstance(mask, torch.Tensor) else f"type {type(mask).__name__}"
        raise TypeError(f"from_additive takes a floating-point mask, got {found}")
    attend, blocked = mask == 0, mask <= ADDITIVE_BLOCKED
    if not bool((attend | blocked).all()):
        bad = mask[~(attend | blocked)].unique()[:5].tolist()
        raise ValueError(f"an additive mask holds 0 (may attend) or -inf / values <= {ADDITIVE_BLOCKED:g} "
                         f"(blocked); found {bad}: a finite bias is not a yes/no mask")
    return attend


def rows_without_visible_key(mask: torch.Tensor | None) -> torch.Tensor | None:
    """Query rows where every key is blocked: bool ``[..., query_pos]`` (``None`` if no mask).

    Raises:
        TypeError: ``mask`` is not ``torch.bool``.
    """
    if mask is None:
        return None
    return ~require_bool(mask).any(dim=-1)


def sliding_window_mask(n_query: int, n_key: int | None = None, *, window: int, sinks: int = 0,
                        device=None) -> torch.Tensor:
    """Causal sliding window of width ``window``, plus ``sinks`` always-visible first keys.

    Query ``i`` (at position ``i + n_key − n_query``, bottom-right aligned as :func:`causal_mask`) may attend
    key ``j`` when ``0 ≤ pos(i) − j < window``: itself and the ``window − 1`` keys before it, so ``window`` keys in
    all (the sliding window of Mistral 7B, Jiang et al. 2023 §2, and of Longformer's causal case), **or** when ``j < sinks`` and ``j ≤ pos(i)`` (the "attention sinks"
    of Xiao et al., "Efficient Streaming Language Models with Attention Sinks", 2024: the first tokens stay
    in view however far the window has moved). ``window ≥ n_key`` gives :func:`causal_mask`.

    Args:
        n_query, n_key: lengths (``n_key`` defaults to ``n_query``).
        window: keys visible behind and including the query, ``≥ 1``.
        sinks: first key positions kept visible, ``≥ 0``.

    Returns:
        bool tensor ``[query_pos, key_pos]``, ``True`` = may attend.

    Raises:
        ValueError: a length is negative, ``window < 1`` or ``sinks < 0``.

    Equivalent to::

        d = (torch.arange(n_query)[:, None] + n_key - n_query) - torch.arange(n_key)[None, :]
        ((d >= 0) & (d < window)) | ((d >= 0) & (torch.arange(n_key)[None, :] < sinks))
    """
    n_key = n_query if n_key is None else n_key
    if n_query < 0 or n_key < 0:
        raise ValueError(f"lengths must be >= 0, got n_query={n_query}, n_key={n_key}")
    if whole(window) is None or window < 1:
        raise ValueError(f"window must be a whole number >= 1, got {window!r}")
    if whole(sinks) is None or sinks < 0:
        raise ValueError(f"sinks must be a whole number >= 0, got {sinks!r}")
    window, sinks = whole(window), whole(sinks)
    query_pos = torch.arange(n_query, device=device)[:, None] + (n_key - n_query)  # [query_pos, 1]
    key_pos = torch.arange(n_key, device=device)[None, :]  # [1, key_pos]
    behind = query_pos - key_pos  # how far back the key is; < 0 is the future
    return (behind >= 0) & ((behind < window) | (key_pos < sinks))
