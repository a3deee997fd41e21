"""Shared key/value heads (multi-query and grouped-query attention) in numbers: parameters and KV-cache bytes.

Sources: Shazeer, "Fast Transformer Decoding: One Write-Head is All You Need" (2019): multi-query attention, one
key/value head shared by every query head; Ainslie et al., "GQA" (2023), §2.2: ``n_kv_heads`` groups between the
two (``n_kv_heads = n_heads`` is plain multi-head attention, ``1`` is multi-query). The computation itself is
:class:`transformer_core.nn.gqa.GroupedQueryAttention`: query head ``h`` reads key/value head ``h // group``.

What a generation keeps per token: a key and a value of ``d_head`` numbers for every key/value head of every layer,
``2 × n_layers × n_kv_heads × d_head × bytes``. SmolLM2-135M in float32: 2 × 30 × 3 × 64 × 4 = 46,080 bytes per
token, 377,487,360 bytes (360 MiB) for its 8,192-token context; with 9 key/value heads (no sharing) three times that.

Shape legend: head, kv_head, pos, d_head, d_model.
"""
from __future__ import annotations

from ..nn.config import whole
from ..nn.gqa import LlamaConfig

SMOLLM2 = LlamaConfig()  # SmolLM2-135M's sizes
FLOAT32_BYTES = 4


def kv_bytes_per_token(n_layers: int, n_kv_heads: int, d_head: int, bytes_per_value: int = FLOAT32_BYTES) -> int:
    """Bytes a KV cache holds per token: ``2 (key and value) × n_layers × n_kv_heads × d_head × bytes_per_value``.

    Raises:
        ValueError: a size is not a positive whole number.
    """
    for name, value in (("n_layers", n_layers), ("n_kv_heads", n_kv_heads), ("d_head", d_head),
                        ("bytes_per_value", bytes_per_value)):
        if whole(value) is None or value < 1:
            raise ValueError(f"{name} must be a positive whole number, got {value!r}")
    return 2 * n_layers * n_kv_heads * d_head * bytes_per_value


def attention_parameters(d_model: int, n_heads: int, n_kv_heads: int, d_head: int) -> dict[str, int]:
    """Weights of one attention layer without biases: ``W_Q`` d_model × n_heads·d_head, ``W_K`` and ``W_V``
    d_model × n_kv_heads·d_head each, ``W_O`` n_heads·d_head × d_model; and their ``total``."""
    if whole(n_kv_heads) is None or n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError(f"n_kv_heads must divide n_heads={n_heads}, got {n_kv_heads!r}")
    out = {"W_Q": d_model * n_heads * d_head, "W_K": d_model * n_kv_heads * d_head,
           "W_V": d_model * n_kv_heads * d_head, "W_O": n_heads * d_head * d_model}
    out["total"] = sum(out.values())
    return out


def group_of(head: int, n_heads: int, n_kv_heads: int) -> int:
    """The key/value head query head ``head`` reads: ``head // (n_heads / n_kv_heads)`` (GQA §2.2)."""
    if n_heads % n_kv_heads or not 0 <= head < n_heads:
        raise ValueError(f"need 0 <= head < n_heads and n_kv_heads | n_heads, got {head}, {n_heads}, {n_kv_heads}")
    return head // (n_heads // n_kv_heads)


def kv_head_of(n_heads: int, n_kv_heads: int | None) -> list[int]:
    """The key/value head of every query head, ``[group_of(h, n_heads, n_kv_heads) for h in range(n_heads)]``;
    ``n_kv_heads=None`` means no sharing (``n_heads``), as in a trace made before the toy model had the choice."""
    n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
    return [group_of(h, n_heads, n_kv_heads) for h in range(n_heads)]


def trace_kv_heads(settings: dict, n_heads: int) -> list[int] | None:
    """The key/value head each query head of a trace read, from its settings' ``n_kv_heads``; None when its heads
    share nothing (``n_kv_heads`` absent, equal to ``n_heads``, or not a divisor of it: an uploaded file's)."""
    n_kv = settings.get("n_kv_heads")
    if whole(n_kv) is None or not 0 < n_kv < n_heads or n_heads % n_kv:
        return None
    return kv_head_of(n_heads, n_kv)


def toy_figures(d_model: int, n_heads: int, n_kv_heads: int, n_layers: int = 1,
                bytes_per_value: int = FLOAT32_BYTES) -> dict:
    """The explorer's toy model with ``n_kv_heads``: ``{"params" (:func:`attention_parameters` of one layer, weights
    without biases, ``× n_layers`` in ``"params_all"``), "kv_bytes_per_token", "mha_kv_bytes_per_token" (with
    ``n_kv_heads = n_heads``), "d_head", "group"}``. SmolLM2's row is ``kv_choices()``'s ``is_model`` one."""
    d_head = d_model // n_heads
    params = attention_parameters(d_model, n_heads, n_kv_heads, d_head)
    return {"params": params, "params_all": params["total"] * n_layers, "d_head": d_head,
            "group": n_heads // n_kv_heads,
            "kv_bytes_per_token": kv_bytes_per_token(n_layers, n_kv_heads, d_head, bytes_per_value),
            "mha_kv_bytes_per_token": kv_bytes_per_token(n_layers, n_heads, d_head, bytes_per_value)}


def kv_choices(config: LlamaConfig = SMOLLM2, *, context: int | None = None,
               bytes_per_value: int = FLOAT32_BYTES) -> list[dict]:
    """One row per possible ``n_kv_heads`` (every divisor of ``n_heads``) for ``config``'s other sizes:
    ``{"n_kv_heads", "group" (query heads per kv head), "attention_params" (all layers), "kv_bytes_per_token",
    "kv_bytes_context" (at ``context`` tokens, default ``config.max_positions``), "is_model" (the model's own
    choice)}``. ``n_kv_heads = n_heads`` is multi-head attention, 1 is multi-query."""
    context = config.max_positions if context is None else context
    rows = []
    for n_kv in (n for n in range(1, config.n_heads + 1) if config.n_heads % n == 0):
        per_token = kv_bytes_per_token(config.n_layers, n_kv, config.d_head, bytes_per_value)
        params = attention_parameters(config.d_model, config.n_heads, n_kv, config.d_head)["total"]
        rows.append({"n_kv_heads": n_kv, "group": config.n_heads // n_kv, "attention_params": params * config.n_layers,
                     "kv_bytes_per_token": per_token, "kv_bytes_context": per_token * context,
                     "is_model": n_kv == config.n_kv_heads})
    return rows


def gqa_vs_torch(n_heads: int = 9, n_kv_heads: int = 3, n_pos: int = 10, d_head: int = 16, seed: int = 0) -> float:
    """Largest difference between :class:`~transformer_core.nn.gqa.GroupedQueryAttention`'s context (random
    weights from a local generator, causal) and torch's ``F.scaled_dot_product_attention(..., enable_gqa=True)`` on
    the module's own rotated queries and its ``n_kv_heads`` key/value heads."""
    import torch
    from torch.nn import functional as F

    from ..nn.gqa import GroupedQueryAttention, rope_for
    from ..nn.hooks import capture

    config = LlamaConfig(vocab_size=8, d_model=n_heads * d_head, n_layers=1, n_heads=n_heads, n_kv_heads=n_kv_heads,
                         d_ff=8, max_positions=max(n_pos, 1))
    generator = torch.Generator().manual_seed(seed)
    module = GroupedQueryAttention(config).eval()
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) / config.d_model ** 0.5)
        x = torch.randn(1, n_pos, config.d_model, generator=generator)
        with capture(module) as stages:
            module(x, x, *rope_for(config, 0, n_pos))
        theirs = F.scaled_dot_product_attention(stages["q"], stages["k_kv"], stages["v_kv"], is_causal=True,
                                                enable_gqa=True)
    return float((stages["context"] - theirs).abs().max())
