"""Scaled dot-product attention and multi-head attention, with a hook point on every stage.

Sources: Vaswani et al., "Attention Is All You Need" (2017), §3.2.1 (Eq. 1) and §3.2.2;
the two tutorial seeds in ``shared/seeds`` (``000``: ``Self_Attention`` +
``MultiHeadAttention``; ``001``: ``ScaledDotProductAttention`` + ``MultiHeadAttention``),
whose post-LN residual block ``norm(x + dropout(W_O(concat)))`` we reproduce.

Shape legend: batch, head, query_pos, key_pos, d_head (= d_k = d_v = d_model / n_heads).
Mask convention: ``True`` = may attend (see :mod:`transformer_core.nn.masks`).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from .hooks import HookPoint
from .masks import require_bool


def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Raw attention scores QKᵀ/√d_k, in float32.

    Scales by √d_k of the actual tensors (seed 001 divides by a global constant
    √64 whatever the head width; we do not).

    Args:
        q: ``[batch, head, query_pos, d_head]``.
        k: ``[batch, head, key_pos, d_head]``.

    Returns:
        ``[batch, head, query_pos, key_pos]`` float32.
    """
    d_k = q.size(-1)
    return torch.matmul(q.float(), k.float().transpose(-2, -1)) / math.sqrt(d_k)


def mask_scores(scores: torch.Tensor, mask: torch.Tensor | None, fill_value: float = float("-inf")) -> torch.Tensor:
    """Put ``fill_value`` where ``mask`` is ``False`` (blocked). ``mask`` broadcasts to ``scores``.

    ``-inf`` (default, seed 000) removes a key exactly; ``-1e9`` (seed 001) nearly so.

    Raises:
        TypeError: ``mask`` is not ``torch.bool`` (an additive float mask would be inverted by
            ``.bool()``; convert with :func:`transformer_core.nn.masks.from_additive` & co.).
    """
    if require_bool(mask) is None:
        return scores
    return scores.masked_fill(~mask, fill_value)


def masked_softmax(masked_scores: torch.Tensor, mask: torch.Tensor | None, zero_empty_rows: bool = True) -> torch.Tensor:
    """Softmax over key positions in float32, with blocked weights exactly 0.

    A query row with no visible key (with no ``mask``: a row of −inf scores) gets weights of exactly 0
    (so its context is 0) rather than NaN (what ``-inf`` fill gives) or uniform weights (what ``-1e9`` gives).
    Pass ``zero_empty_rows=False`` to see the raw softmax, as the seeds compute it.

    Raises:
        TypeError: ``mask`` is not ``torch.bool``.
    """
    require_bool(mask)
    weights = torch.softmax(masked_scores.float(), dim=-1)
    if mask is not None and zero_empty_rows:
        weights = weights.masked_fill(~mask, 0.0)  # also clears NaN of empty rows
    elif zero_empty_rows:  # scores masked by the caller (−inf), no mask given: an all −inf row is empty too
        weights = weights.masked_fill(torch.isneginf(masked_scores).all(-1, keepdim=True), 0.0)
    return weights


def dropout(x: torch.Tensor, p: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """Inverted dropout (Srivastava et al., 2014) drawing from ``generator``: each element is kept
    with probability ``1 − p`` and scaled by ``1/(1 − p)``; ``p = 0`` returns ``x``, ``p = 1`` zeros.

    The same computation as ``nn.Dropout`` in training mode on the CPU (torch's ``_dropout_impl``:
    ``empty_like(x).bernoulli_(1 − p) / (1 − p) * x``), so a generator seeded with ``s`` gives
    the numbers ``nn.Dropout`` gives after ``torch.manual_seed(s)`` — without the global RNG.

    Raises:
        ValueError: ``p`` is not in [0, 1].
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    if p == 0.0:
        return x
    if p == 1.0:
        return x * torch.zeros((), dtype=x.dtype)
    noise = torch.empty_like(x).bernoulli_(1 - p, generator=generator)
    noise.div_(1 - p)
    return x * noise


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    fill_value: float = float("-inf"),
    zero_empty_rows: bool = True,
    dropout: nn.Module | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention(Q, K, V) = softmax(QKᵀ/√d_k) V  ("Attention Is All You Need", Eq. 1).

    Args:
        q: ``[batch, head, query_pos, d_k]``.
        k: ``[batch, head, key_pos, d_k]``.
        v: ``[batch, head, key_pos, d_v]``.
        mask: ``torch.bool``, broadcastable to ``[batch, head, query_pos, key_pos]``;
            ``True`` = may attend. ``None`` = every key visible. Unlike
            ``F.scaled_dot_product_attention``, a float (additive) mask is refused, not added:
            convert it with :func:`transformer_core.nn.masks.from_additive`.
        fill_value: score put in blocked cells before softmax (``-inf``; seed 001 uses ``-1e9``).
        zero_empty_rows: a row with no visible key gets weights 0 (default) instead of
            the raw softmax (NaN with ``-inf``, uniform with ``-1e9``).
        dropout: applied to the weights used for the context (not to the returned weights).

    Returns:
        ``(context, weights)``: context ``[batch, head, query_pos, d_v]`` (float32),
        weights ``[batch, head, query_pos, key_pos]`` (float32, before dropout).

    Raises:
        TypeError: ``mask`` is not ``torch.bool`` (message names the dtype and the converters).
        RuntimeError: shapes do not broadcast (from ``torch.matmul``).
    """
    scores = attention_scores(q, k)
    weights = masked_softmax(mask_scores(scores, mask, fill_value), mask, zero_empty_rows)
    used = dropout(weights) if dropout is not None else weights
    return torch.matmul(used, v.float()), weights


def repeat_kv_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``[batch, kv_head, pos, d]`` → ``[batch, n_heads, pos, d]``: key/value head g repeated for query heads
    g·group … g·group + group − 1, group = n_heads / kv_head (grouped-query attention; ``x`` itself when nothing is
    shared)."""
    group = n_heads // x.shape[1]
    return x if group == 1 else x.repeat_interleave(group, dim=1)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with a post-LN residual block (§3.2.2; both seeds).

    ``output = norm(query + dropout(W_O(concat_h(head_h))))`` where
    ``head_h = Attention(query W_Q^h, key W_K^h, value W_V^h)``.

    Hook points (stage names for :func:`~transformer_core.nn.hooks.capture`):
    ``q``, ``k``, ``v`` ``[batch, head, pos, d_k]`` (``k``, ``v`` per query head, shared heads repeated); ``scores`` (QKᵀ/√d_k, before
    masking), ``masked_scores``, ``weights`` (softmax) ``[batch, head, query_pos, key_pos]``;
    ``dropped_weights`` (only in training mode with dropout > 0; its draw, and the output
    dropout's, come from the ``generator`` passed to ``forward``, else from the global RNG as
    ``nn.Dropout``'s do); ``context``
    ``[batch, head, query_pos, d_k]``; ``concat`` and ``projected`` (W_O output)
    ``[batch, query_pos, d_model]``; ``output`` (after residual and LayerNorm).

    Shared key/value heads (``n_kv_heads``; multi-query attention, Shazeer 2019, is 1; grouped-query attention,
    Ainslie et al. 2023 §2.2, anything between 1 and ``n_heads``): ``W_K`` and ``W_V`` project to ``n_kv_heads``
    heads only, and query head ``h`` reads key/value head ``h // (n_heads / n_kv_heads)`` (:attr:`kv_head_of`).
    The ``k`` and ``v`` stages still hold one head per query head (each key/value head repeated for the query
    heads of its group), so every per-head view reads them as before. ``n_kv_heads = n_heads`` (the default) is
    ordinary multi-head attention, with the same weights drawn in the same order.

    Raises:
        ValueError: ``n_heads`` does not divide ``d_model``, ``n_kv_heads`` does not divide ``n_heads``, a size is
            not positive, ``fill_value`` is NaN or +inf, or ``layer_norm_eps`` is not in (0, 1) (each would put
            NaN in the output).
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, *,
                 fill_value: float = float("-inf"), layer_norm_eps: float = 1e-5,
                 n_kv_heads: int | None = None) -> None:
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_model and n_heads must be positive, got d_model={d_model}, n_heads={n_heads}")
        if d_model % n_heads:
            raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}")
        if fill_value != fill_value or fill_value == float("inf"):
            raise ValueError(f"fill_value must be -inf or a finite number, got {fill_value!r}")
        if not 0 < layer_norm_eps < 1:
            raise ValueError(f"layer_norm_eps must be a number in (0, 1), got {layer_norm_eps!r}")
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        if n_kv_heads <= 0 or n_heads % n_kv_heads:
            raise ValueError(f"n_kv_heads={n_kv_heads} does not divide n_heads={n_heads}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.n_kv_heads = n_kv_heads
        self.fill_value = fill_value
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, n_kv_heads * self.d_k)  # [n_kv_heads·d_k, d_model]: one block per key head
        self.W_V = nn.Linear(d_model, n_kv_heads * self.d_k)
        self.W_O = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)  # on the weights (seed 000)
        self.dropout = nn.Dropout(dropout)  # on W_O's output, before the residual
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps)
        for stage in ("q", "k", "v", "scores", "masked_scores", "weights", "dropped_weights",
                      "context", "concat", "projected", "output"):
            setattr(self, f"hook_{stage}", HookPoint())

    def _split_heads(self, x: torch.Tensor, n: int | None = None) -> torch.Tensor:
        batch, pos, _ = x.shape
        return x.view(batch, pos, n or self.n_heads, self.d_k).transpose(1, 2)  # [batch, head, pos, d_k]

    @property
    def kv_head_of(self) -> list[int]:
        """The key/value head each query head reads: ``[h // (n_heads / n_kv_heads) for h in range(n_heads)]``."""
        group = self.n_heads // self.n_kv_heads
        return [h // group for h in range(self.n_heads)]

    def _per_query_head(self, x: torch.Tensor) -> torch.Tensor:
        return repeat_kv_heads(x, self.n_heads)  # [batch, kv_head, pos, d_k] → [batch, head, pos, d_k]

    def _dropout(self, module: nn.Dropout, x: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        if generator is None or not self.training:
            return module(x)
        return dropout(x, module.p, generator)

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                mask: torch.Tensor | None = None, *,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Args: query ``[batch, query_pos, d_model]``; key, value ``[batch, key_pos, d_model]``;
        mask ``torch.bool`` broadcastable to ``[batch, head, query_pos, key_pos]``, ``True`` = may
        attend; generator: where the training-mode dropout draws come from (:func:`dropout`).

        Returns ``(output [batch, query_pos, d_model], weights [batch, head, query_pos, key_pos])``;
        weights are per head, never averaged.

        Raises:
            TypeError: ``mask`` is not ``torch.bool`` (see :func:`transformer_core.nn.masks.require_bool`), or an
                input's dtype is not the module's (float32 unless converted).
            ValueError: an input is not ``[batch, pos, d_model]``, or key and value differ in shape.
        """
        require_bool(mask)
        for name, x in (("query", query), ("key", key), ("value", value)):
            if x.dtype != self.W_Q.weight.dtype:
                raise TypeError(f"{name} is {x.dtype}, the module's weights are {self.W_Q.weight.dtype}: convert one "
                                f"(x.to(torch.float32) or module.to(x.dtype))")
            if x.dim() != 3 or x.shape[-1] != self.d_model:
                raise ValueError(f"{name} must be [batch, pos, d_model={self.d_model}], got {list(x.shape)}")
        if key.shape != value.shape:
            raise ValueError(f"key and value must have the same shape, got {list(key.shape)} and {list(value.shape)}")
        batch, n_query, _ = query.shape
        # 1. project and split into heads
        q = self.hook_q(self._split_heads(self.W_Q(query)))  # [batch, head, query_pos, d_k]
        # keys and values: n_kv_heads heads, each repeated for the query heads of its group
        k = self.hook_k(self._per_query_head(self._split_heads(self.W_K(key), self.n_kv_heads)))  # [batch, head, key_pos, d_k]
        v = self.hook_v(self._per_query_head(self._split_heads(self.W_V(value), self.n_kv_heads)))  # [batch, head, key_pos, d_k]
        # 2. scaled dot-product attention, one stage at a time
        scores = self.hook_scores(attention_scores(q, k))  # [batch, head, query_pos, key_pos]
        masked = self.hook_masked_scores(mask_scores(scores, mask, self.fill_value))
        weights = self.hook_weights(masked_softmax(masked, mask))
        used = weights
        if self.training and self.attn_dropout.p > 0:
            used = self.hook_dropped_weights(self._dropout(self.attn_dropout, weights, generator))
        context = self.hook_context(torch.matmul(used, v.float()).to(v.dtype))  # [batch, head, query_pos, d_k]
        # 3. concatenate heads and project with W_O
        concat = self.hook_concat(context.transpose(1, 2).reshape(batch, n_query, self.d_model))  # [batch, query_pos, d_model]
        projected = self.hook_projected(self.W_O(concat))
        # 4. residual + LayerNorm (post-LN)
        output = self.hook_output(self.norm(query + self._dropout(self.dropout, projected, generator)))
        return output, weights
