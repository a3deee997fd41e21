"""A LLaMA decoder block: grouped-query attention with RoPE, a SwiGLU feed-forward, RMSNorm before each, and a
plain KV cache for generation.

Sources:
- Ainslie et al., "GQA: Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints" (2023),
  §2.2: ``n_heads`` query heads in ``n_kv_heads`` groups, every query head of a group using its group's one key
  and value head (query head h reads key/value head ``h // (n_heads / n_kv_heads)``).
- Shazeer, "GLU Variants Improve Transformer" (2020), Eq. 5–6: ``FFN_SwiGLU(x) = (Swish(x W) ⊙ x V) W_2``
  (Swish₁ = SiLU, ``x · sigmoid(x)``).
- Touvron et al., "LLaMA: Open and Efficient Foundation Language Models" (2023), §2.2: pre-normalisation with
  RMSNorm, SwiGLU, rotary embeddings; no biases in the linear layers.
- Vaswani et al. (2017) Eq. 1 for the attention itself: :mod:`transformer_core.nn.attention` computes it.

Hook points under ``attention`` (stage names for :func:`~transformer_core.nn.hooks.capture`, as in
:class:`~transformer_core.nn.attention.MultiHeadAttention`, so a page can treat every head alike):
``input`` (RMSNorm'ed residual, ``[batch, pos, d_model]``); ``q``, ``k`` (after the rotation), ``v``
``[batch, head, pos, d_head]`` with keys and values repeated for each query head of their group; ``k_kv``,
``v_kv`` ``[batch, kv_head, pos, d_head]``, the raw key/value heads (with a cache: every position so far);
``scores``, ``masked_scores``, ``weights`` ``[batch, head, query_pos, key_pos]``; ``context``
``[batch, head, query_pos, d_head]``; ``concat``, ``projected`` ``[batch, query_pos, d_model]``; ``output``
(the residual stream after the attention's addition). Under ``feed_forward``: ``input``, ``gate``, ``up``,
``hidden`` (``silu(gate) · up``, ``[batch, pos, d_ff]``), ``projected`` and ``output`` (after the addition).
Mask convention: ``True`` = may attend (see :mod:`transformer_core.nn.masks`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from .attention import attention_scores, mask_scores, masked_softmax, repeat_kv_heads
from .config import whole
from .hooks import HookPoint, watched
from .rotary import RMSNorm, apply_rotary, rope_tables, scaled_inverse_frequencies


@dataclass(frozen=True)
class LlamaConfig:
    """Sizes of a LLaMA-family decoder; the defaults are SmolLM2-135M's (its GGUF header).

    The fields after ``max_positions`` describe the family's variants (defaults: LLaMA's): ``head_dim`` when a
    head is not ``d_model / n_heads`` wide (Qwen3); ``qkv_bias`` (Qwen2's biases on W_Q, W_K, W_V) and ``o_bias``
    (LLaMA's ``attention_bias`` puts one on W_O too); ``qk_norm`` (Qwen3's RMSNorm over each query and key head
    before RoPE); ``windows``, per layer the number of most recent positions a query sees, 0 for all (Mistral's
    sliding window: key j is seen from query i when i − window < j ≤ i); ``tied`` (the unembedding is the
    embedding matrix); ``rope_scaling`` as sorted ``(key, value)`` pairs of a Hugging Face ``rope_scaling``
    (:func:`~transformer_core.nn.rotary.scaled_inverse_frequencies`).

    Raises:
        ValueError: a size is not a positive integer, ``n_kv_heads`` does not divide ``n_heads``, a head is not an
            even width, ``windows`` is not one non-negative integer per layer, or ``rope_base`` / ``norm_eps`` /
            ``rope_scaling`` is out of range.
    """

    vocab_size: int = 49152
    d_model: int = 576
    n_layers: int = 30
    n_heads: int = 9  # query heads
    n_kv_heads: int = 3  # key/value heads, each shared by n_heads / n_kv_heads query heads
    d_ff: int = 1536
    rope_base: float = 100000.0
    norm_eps: float = 1e-5
    max_positions: int = 8192  # llama.context_length
    head_dim: int | None = None  # None: d_model / n_heads
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    windows: tuple[int, ...] | None = None  # None: every layer sees every earlier position
    tied: bool = True
    rope_scaling: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "d_ff", "max_positions"):
            value = getattr(self, name)
            if whole(value) is None or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
            object.__setattr__(self, name, whole(value))
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads={self.n_kv_heads} does not divide n_heads={self.n_heads}")
        if self.head_dim is None:
            if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
                raise ValueError(f"d_model={self.d_model} must be n_heads={self.n_heads} times an even head width")
        elif whole(self.head_dim) is None or self.head_dim <= 0 or self.head_dim % 2:
            raise ValueError(f"head_dim must be a positive even integer, got {self.head_dim!r}")
        if not (isinstance(self.rope_base, int | float) and math.isfinite(self.rope_base) and self.rope_base > 1):
            raise ValueError(f"rope_base must be a finite number above 1, got {self.rope_base!r}")
        if not (isinstance(self.norm_eps, int | float) and 0 < self.norm_eps < 1):
            raise ValueError(f"norm_eps must be in (0, 1), got {self.norm_eps!r}")
        if self.windows is not None:
            windows = tuple(self.windows)
            if len(windows) != self.n_layers or any(whole(w) is None or w < 0 for w in windows):
                raise ValueError(f"windows must be {self.n_layers} non-negative integers, got {self.windows!r}")
            object.__setattr__(self, "windows", windows)
        object.__setattr__(self, "rope_scaling", tuple(sorted(dict(self.rope_scaling).items())))
        if self.rope_scaling:
            scaled_inverse_frequencies(self.d_head, self.rope_base, self.scaling)  # refuses an unknown kind now

    @property
    def scaling(self) -> dict | None:
        """``rope_scaling`` as a dict (``None`` when there is none)."""
        return dict(self.rope_scaling) or None

    def window(self, layer: int) -> int | None:
        """Layer ``layer``'s sliding window (positions a query sees, itself included), ``None`` for all."""
        return (self.windows[layer] or None) if self.windows is not None else None

    @property
    def d_head(self) -> int:
        """Width of one query/key/value head: ``head_dim``, else d_model / n_heads (64 for SmolLM2)."""
        return self.head_dim if self.head_dim is not None else self.d_model // self.n_heads

    @property
    def group(self) -> int:
        """Query heads per key/value head: n_heads / n_kv_heads (3 for SmolLM2)."""
        return self.n_heads // self.n_kv_heads


class EmptyLinear(nn.Linear):
    """``nn.Linear`` whose weights are left uninitialised (``torch.empty``): a pretrained model's weights are
    loaded at once, and initialising 135M numbers first costs about a second. Fill them before use."""

    def reset_parameters(self) -> None:
        pass


class KVCache:
    """Past keys and values of every layer, for generating one token after another.

    ``keys[i]``, ``values[i]``: layer i's rotated keys and its values so far, ``[batch, kv_head, past, d_head]``
    (``None`` before the first call). Each forward call appends its new positions; :attr:`length` is the number of
    positions stored, which is also the position index of the next token (RoPE angles continue from there).
    A cache belongs to one generation: it is plain data, never shared between threads.
    """

    def __init__(self, n_layers: int) -> None:
        self.keys: list[torch.Tensor | None] = [None] * n_layers
        self.values: list[torch.Tensor | None] = [None] * n_layers
        self.length = 0  # positions stored (the same in every layer once a forward call has finished)

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the new positions ``k``, ``v`` ``[batch, kv_head, new, d_head]`` to ``layer``'s store and return the
        whole of it, ``[batch, kv_head, past + new, d_head]``. The caller advances :attr:`length` after the last layer.
        """
        if self.keys[layer] is not None:
            k = torch.cat((self.keys[layer], k), dim=2)
            v = torch.cat((self.values[layer], v), dim=2)
        self.keys[layer], self.values[layer] = k, v
        return k, v


def causal_mask(n_new: int, past: int, window: int | None = None) -> torch.Tensor | None:
    """bool ``[1, 1, n_new, past + n_new]``: new query j (at position past + j) may attend key positions ≤ past + j,
    and with a ``window`` only those above past + j − window (the ``window`` most recent, itself included).

    ``None`` when every key is visible (one new token after a cache: the usual generation step).
    """
    if n_new == 1 and (window is None or past < window):
        return None
    query_pos = torch.arange(past, past + n_new)[:, None]  # [n_new, 1], absolute positions
    key_pos = torch.arange(past + n_new)[None, :]  # [1, past + n_new]
    visible = key_pos <= query_pos
    if window is not None:
        visible = visible & (key_pos > query_pos - window)
    return visible[None, None]


class GroupedQueryAttention(nn.Module):
    """Causal self-attention with ``n_heads`` query heads sharing ``n_kv_heads`` key/value heads, keys and queries
    turned by RoPE (half-split layout, base ``config.rope_base``); biases only where the config asks
    (``qkv_bias``, ``o_bias``), an RMSNorm per query and key head before RoPE with ``qk_norm`` (``q_norm``,
    ``k_norm``, ``[d_head]`` weights), and the layer's sliding window (``config.window(layer)``).

    Parameters: ``W_Q`` ``[n_heads·d_head, d_model]``, ``W_K``, ``W_V`` ``[n_kv_heads·d_head, d_model]``, ``W_O``
    ``[d_model, n_heads·d_head]`` (``nn.Linear`` layout: out × in), left uninitialised (:class:`EmptyLinear`). Hook points: see the module docstring.
    """

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = config
        self.n_heads, self.n_kv_heads, self.d_k = config.n_heads, config.n_kv_heads, config.d_head
        d, q, kv = config.d_model, config.n_heads * config.d_head, config.n_kv_heads * config.d_head
        self.W_Q = EmptyLinear(d, q, bias=config.qkv_bias)
        self.W_K = EmptyLinear(d, kv, bias=config.qkv_bias)
        self.W_V = EmptyLinear(d, kv, bias=config.qkv_bias)
        self.W_O = EmptyLinear(q, d, bias=config.o_bias)
        if config.qk_norm:  # only then: SmolLM2's state dict keeps exactly its own names
            self.q_norm = RMSNorm(config.d_head, config.norm_eps)
            self.k_norm = RMSNorm(config.d_head, config.norm_eps)
        for stage in ("input", "q", "k", "v", "k_kv", "v_kv", "scores", "masked_scores", "weights", "context",
                      "concat", "projected", "output"):
            setattr(self, f"hook_{stage}", HookPoint(copy=False))  # no in-place change follows
        # the hook points only the hooked path passes (a plain tuple: not registered twice as submodules)
        self._inner_points = tuple(getattr(self, f"hook_{stage}") for stage in (
            "q", "k", "v", "k_kv", "v_kv", "scores", "masked_scores", "weights", "context"))

    def _heads(self, x: torch.Tensor, n: int) -> torch.Tensor:
        batch, pos, _ = x.shape
        return x.view(batch, pos, n, self.d_k).transpose(1, 2)  # [batch, n, pos, d_head]

    def _per_query_head(self, x: torch.Tensor) -> torch.Tensor:
        return repeat_kv_heads(x, self.n_heads)  # [batch, kv_head, pos, d_head] → [batch, head, pos, d_head]

    def forward(self, x: torch.Tensor, normed: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                cache: KVCache | None = None, layer: int = 0) -> torch.Tensor:
        """Args: ``x`` the residual stream ``[batch, pos, d_model]``; ``normed`` its RMSNorm; ``cos``, ``sin``
        ``[pos, d_head]`` for the new positions (:func:`~transformer_core.nn.rotary.rope_tables`); ``cache`` (its
        ``length`` = positions already stored) and this block's ``layer`` index in it.

        Returns the residual stream after the addition, ``[batch, pos, d_model]``.
        """
        batch, n_new, _ = x.shape
        past = 0 if cache is None else cache.length
        normed = self.hook_input(normed)
        q = self._heads(self.W_Q(normed), self.n_heads)  # [batch, head, new, d_head]
        k_kv = self._heads(self.W_K(normed), self.n_kv_heads)  # [batch, kv_head, new, d_head]
        if self.config.qk_norm:  # each head's vector normalised on its own, before the rotation (Qwen3)
            q, k_kv = self.q_norm(q), self.k_norm(k_kv)
        q, k_kv = apply_rotary(q, cos, sin), apply_rotary(k_kv, cos, sin)
        v_kv = self._heads(self.W_V(normed), self.n_kv_heads)  # [batch, kv_head, new, d_head]
        if cache is not None:
            k_kv, v_kv = cache.append(layer, k_kv, v_kv)  # [batch, kv_head, past + new, d_head]
        mask = causal_mask(n_new, past, self.config.window(layer))
        if watched(self._inner_points):  # a capture or edit of a stage here: every stage, keys and values repeated
            k_kv, v_kv = self.hook_k_kv(k_kv), self.hook_v_kv(v_kv)
            q = self.hook_q(q)
            k = self.hook_k(self._per_query_head(k_kv))  # [batch, head, key_pos, d_head]
            v = self.hook_v(self._per_query_head(v_kv))
            scores = self.hook_scores(attention_scores(q, k))  # [batch, head, query_pos, key_pos]
            masked = self.hook_masked_scores(mask_scores(scores, mask))
            weights = self.hook_weights(masked_softmax(masked, mask, zero_empty_rows=False))  # no row is empty
            context = self.hook_context(torch.matmul(weights, v))  # [batch, head, query_pos, d_head]
        else:  # nobody looks: the same numbers without copying keys and values for every query head
            context = grouped_attention(q, k_kv, v_kv, mask)
        concat = self.hook_concat(context.transpose(1, 2).reshape(batch, n_new, self.n_heads * self.d_k))
        projected = self.hook_projected(self.W_O(concat))  # [batch, query_pos, d_model]
        return self.hook_output(x + projected)


def grouped_attention(q: torch.Tensor, k_kv: torch.Tensor, v_kv: torch.Tensor,
                      mask: torch.Tensor | None) -> torch.Tensor:
    """softmax(QKᵀ/√d) V with the query heads of a group stacked against their one key/value head, so the keys and
    values are never repeated: ``q`` ``[batch, head, query_pos, d_head]``, ``k_kv``, ``v_kv`` ``[batch, kv_head,
    key_pos, d_head]``, ``mask`` bool broadcastable to ``[batch, head, query_pos, key_pos]`` → context ``[batch,
    head, query_pos, d_head]``. The path of :class:`GroupedQueryAttention` when no hook point is watched."""
    batch, n_heads, n_query, d = q.shape
    n_kv = k_kv.shape[1]
    stacked = q.reshape(batch, n_kv, (n_heads // n_kv) * n_query, d)  # [batch, kv_head, group·query_pos, d_head]
    scores = attention_scores(stacked, k_kv).view(batch, n_heads, n_query, -1)  # [batch, head, query_pos, key_pos]
    weights = masked_softmax(mask_scores(scores, mask), mask, zero_empty_rows=False)
    context = torch.matmul(weights.view(batch, n_kv, -1, weights.shape[-1]), v_kv)  # [batch, kv_head, g·query, d]
    return context.view(batch, n_heads, n_query, d)


class SwiGLU(nn.Module):
    """``W_down(silu(W_gate x) ⊙ W_up x)`` (Shazeer 2020, Eq. 6), no biases; ``[batch, pos, d_model]`` in and out.
    Hook points: ``input``, ``gate``, ``up``, ``hidden`` ``[batch, pos, d_ff]``, ``projected``, ``output`` (after
    the residual addition)."""

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.W_gate = EmptyLinear(d_model, d_ff, bias=False)
        self.W_up = EmptyLinear(d_model, d_ff, bias=False)
        self.W_down = EmptyLinear(d_ff, d_model, bias=False)
        for stage in ("input", "gate", "up", "hidden", "projected", "output"):
            setattr(self, f"hook_{stage}", HookPoint(copy=False))  # no in-place change follows

    def forward(self, x: torch.Tensor, normed: torch.Tensor) -> torch.Tensor:
        """``x`` the residual stream, ``normed`` its RMSNorm → the residual stream after the addition."""
        normed = self.hook_input(normed)
        gate = self.hook_gate(self.W_gate(normed))
        up = self.hook_up(self.W_up(normed))
        hidden = self.hook_hidden(F.silu(gate) * up)  # [batch, pos, d_ff]
        projected = self.hook_projected(self.W_down(hidden))
        return self.hook_output(x + projected)


class LlamaBlock(nn.Module):
    """``x + Attn(RMSNorm(x))`` then ``+ FFN(RMSNorm(·))`` (pre-norm). Submodules ``attention_norm``,
    ``attention`` (:class:`GroupedQueryAttention`), ``ffn_norm``, ``feed_forward`` (:class:`SwiGLU`)."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attention = GroupedQueryAttention(config)
        self.ffn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.feed_forward = SwiGLU(config.d_model, config.d_ff)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: KVCache | None = None,
                layer: int = 0) -> torch.Tensor:
        """``[batch, pos, d_model]`` → same; ``cos``/``sin``/``cache``/``layer`` as in
        :meth:`GroupedQueryAttention.forward`."""
        x = self.attention(x, self.attention_norm(x), cos, sin, cache, layer)
        return self.feed_forward(x, self.ffn_norm(x))


def rope_for(config: LlamaConfig, start: int, n_new: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin ``[n_new, d_head]`` for positions ``start … start + n_new − 1``."""
    return rope_tables(torch.arange(start, start + n_new), config.d_head, config.rope_base, config.scaling)
