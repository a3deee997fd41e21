"""Small computations for the teaching pages (masks lab, multi-head pipeline).

Every number here goes through the package's own functions and modules
(:func:`~transformer_core.nn.attention.mask_scores`, :func:`~transformer_core.nn.attention.masked_softmax`,
:func:`~transformer_core.nn.attention.scaled_dot_product_attention`, :class:`MultiHeadAttention`,
:class:`PositionwiseFeedForward`, :mod:`~transformer_core.nn.masks`, :func:`capture`); this module
only arranges the experiments a lesson needs: the seeds' two fill conventions, float16,
causal alignment against a cached prefix, attention dropout in training mode, a sentence
followed step by step through one encoder layer, and seed 001's ``Conv1d(kernel_size=1)``
feed-forward checked against our ``Linear`` one.

Never imports Streamlit. Mask convention: ``True`` = may attend.
Shape legend: batch, head, query_pos, key_pos, pos, d_k, d_model, d_ff.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..nn import masks
from ..nn.attention import MultiHeadAttention, mask_scores, masked_softmax, scaled_dot_product_attention
from ..nn.config import EncoderConfig
from ..nn.embedding import embed_tokens
from ..nn.encoder import Encoder, build_seeded
from ..nn.feed_forward import PositionwiseFeedForward
from ..nn.hooks import capture
from ..text.i18n import _

NEG_INF = float("-inf")
SEED_001_FILL = -1e9


def masked_stages(scores: torch.Tensor, mask: torch.Tensor | None, *, fill_value: float = NEG_INF,
                  zero_empty_rows: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """``(masked_scores, weights)`` for raw ``scores [..., query_pos, key_pos]`` and a mask (``True`` = may attend)."""
    masked = mask_scores(scores, mask, fill_value)
    return masked, masked_softmax(masked, mask, zero_empty_rows)


def seed_conventions(scores: torch.Tensor, mask: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The same scores masked the three ways: ``{"seed 000", "seed 001", "ours"} → (masked_scores, weights)``.

    * seed 000: its mask is ``0`` = blocked (``masked_fill(mask == 0, -inf)``), raw softmax;
    * seed 001: its mask is ``True`` = blocked (``masked_fill_(attn_mask, -1e9)``), raw softmax;
    * ours: ``True`` = may attend, ``-inf``, a row with no visible key gets weights 0.

    Each seed mask is made with the named converter and read back with its inverse, so the
    round trip of the conventions is part of the experiment.
    """
    mask = mask.bool()
    seed000_mask = masks.to_zero_blocked(mask)  # int, 0 = blocked
    seed001_mask = masks.to_true_blocked(mask)  # bool, True = blocked
    return {
        "seed 000": masked_stages(scores, masks.from_zero_blocked(seed000_mask), fill_value=NEG_INF,
                                  zero_empty_rows=False),
        "seed 001": masked_stages(scores, masks.from_true_blocked(seed001_mask), fill_value=SEED_001_FILL,
                                  zero_empty_rows=False),
        "ours": masked_stages(scores, mask),
    }


def fill_in_dtype(scores: torch.Tensor, mask: torch.Tensor, fill_value: float,
                  dtype: torch.dtype = torch.float16) -> tuple[torch.Tensor | None, str | None]:
    """Try ``mask_scores(scores.to(dtype), mask, fill_value)``.

    Returns ``(masked_scores, None)`` or ``(None, "ErrorType: message")`` when torch refuses
    the fill value (e.g. ``-1e9`` in float16, whose range ends at ±65504).
    """
    try:
        return mask_scores(scores.to(dtype), mask, fill_value), None
    except (RuntimeError, OverflowError) as err:
        return None, f"{type(err).__name__}: {err}"


def float16_facts() -> dict[str, str]:
    """What float16 makes of the fill values, computed by torch (text, for display)."""
    finfo = torch.finfo(torch.float16)
    return {
        "torch.tensor(-1e9, dtype=torch.float16)": str(torch.tensor(SEED_001_FILL, dtype=torch.float16).item()),
        "torch.tensor(-1e9).half()": str(torch.tensor(SEED_001_FILL).half().item()),
        "torch.finfo(torch.float16).min": str(finfo.min),
        "torch.finfo(torch.float16).max": str(finfo.max),
    }


def half_module_runs(d_model: int, n_heads: int, n_pos: int, fill_value: float = SEED_001_FILL,
                     seed: int = 0) -> tuple[bool, str]:
    """Run a float16 :class:`MultiHeadAttention` with ``fill_value`` and a causal mask.

    Ours computes the scores in float32 (:func:`attention_scores`), so a -1e9 fill fits.
    The module's weights and then ``x`` are drawn from a local generator seeded with ``seed``.
    Returns ``(ok, what happened)``.
    """
    generator = torch.Generator().manual_seed(seed)
    mha = build_seeded(lambda: MultiHeadAttention(d_model, n_heads, fill_value=fill_value), generator).half().eval()
    x = torch.randn(1, n_pos, d_model, generator=generator).half()  # [batch, pos, d_model]
    try:
        with torch.no_grad(), capture(mha) as stages:
            out, _weights = mha(x, x, x, masks.causal_mask(n_pos))
    except (RuntimeError, OverflowError) as err:
        return False, f"{type(err).__name__}: {err}"
    return True, _("output {dtype}, all finite: {finite}, {n} stages captured — attention_scores computes the scores "
                   "in float32, where {fill} fits").format(dtype=str(out.dtype).removeprefix("torch."),
                                                          finite=bool(torch.isfinite(out).all()), n=len(stages),
                                                          fill=f"{fill_value:g}")


def torch_is_causal_mask(n_query: int, n_key: int) -> torch.Tensor:
    """Which keys ``F.scaled_dot_product_attention(..., is_causal=True)`` lets each query see.

    Read off torch itself: with all-zero queries and keys every visible key gets the same
    weight, and values ``V = I`` copy the weights into the output.

    Returns bool ``[query_pos, key_pos]``, ``True`` = may attend (top-left alignment).
    """
    q = torch.zeros(1, 1, n_query, 1)  # [batch, head, query_pos, d_k]
    k = torch.zeros(1, 1, n_key, 1)  # [batch, head, key_pos, d_k]
    v = torch.eye(n_key)[None, None]  # [batch, head, key_pos, key_pos]
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)[0, 0] > 0


def cached_prefix(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, n_new: int) -> dict:
    """The last ``n_new`` queries against all keys (a cached prefix), with both causal alignments.

    ``q, k, v``: ``[batch, head, pos, d_k]`` of the whole sentence. The reference is the
    full sentence under a square causal mask; the new rows must reproduce its last rows.

    Returns masks (``top-left``, ``bottom-right``: bool ``[n_new, pos]``), their weights
    (``[batch, head, n_new, pos]``), the reference rows and the max abs difference to them.
    """
    n = k.size(-2)
    if not 1 <= n_new <= n:
        raise ValueError(f"n_new must be in [1, {n}], got {n_new}")
    _context, full = scaled_dot_product_attention(q, k, v, masks.causal_mask(n))
    reference = full[..., n - n_new:, :]  # [batch, head, n_new, key_pos]
    out = {"reference": reference, "masks": {}, "weights": {}, "max_diff": {}}
    for name, mask in (("top-left", torch_is_causal_mask(n_new, n)), ("bottom-right", masks.causal_mask(n_new, n))):
        _context, weights = scaled_dot_product_attention(q[..., n - n_new:, :], k, v, mask)
        out["masks"][name], out["weights"][name] = mask, weights
        out["max_diff"][name] = float((weights - reference).abs().max())
    return out


def attention_dropout(x: torch.Tensor, mask: torch.Tensor | None, config: EncoderConfig, *, training: bool,
                      dropout_seed: int = 0) -> dict[str, torch.Tensor]:
    """The toy encoder's first attention block (weights seeded by ``config.seed``), with ``config.dropout``.

    In training mode the ``dropped_weights`` stage is captured; in eval mode dropout is the
    identity and ``dropped_weights`` is what the module's own dropout returns (the weights).
    The dropout draws come from a local ``torch.Generator`` seeded with ``dropout_seed`` (never
    the global RNG), so the same arguments give bit-identical numbers in any thread.

    Returns stages ``weights`` and ``dropped_weights`` ``[batch, head, query_pos, key_pos]``.
    """
    mha = Encoder(config).layers[0].attention
    mha.train(training)
    generator = torch.Generator().manual_seed(dropout_seed)
    with torch.no_grad(), capture(mha) as stages:
        mha(x, x, x, mask, generator=generator)
        if "dropped_weights" not in stages:  # eval mode (or p = 0): what the module's dropout does
            stages["dropped_weights"] = mha.attn_dropout(stages["weights"])
    return {"weights": stages["weights"], "dropped_weights": stages["dropped_weights"]}


def count_parameters(module: nn.Module) -> int:
    """Number of trainable numbers in ``module``."""
    return sum(p.numel() for p in module.parameters())


def attention_parameter_counts(d_model: int, head_counts: list[int]) -> dict[int, int]:
    """``{n_heads: parameters of MultiHeadAttention(d_model, n_heads)}``, each counted on a module built
    on the ``meta`` device (shapes only: no memory, no random draw)."""
    with torch.device("meta"):
        return {h: count_parameters(MultiHeadAttention(d_model, h)) for h in head_counts}


def conv1d_twin(ff: PositionwiseFeedForward) -> tuple[nn.Conv1d, nn.Conv1d]:
    """Seed 001's ``Conv1d(kernel_size=1)`` pair carrying the same numbers as ``ff.W_1``, ``ff.W_2``.

    A Linear weight ``[out, in]`` becomes a kernel-1 convolution weight ``[out, in, 1]``.
    """
    convs = []
    for linear in (ff.W_1, ff.W_2):
        conv = nn.Conv1d(linear.in_features, linear.out_features, kernel_size=1)
        with torch.no_grad():
            conv.weight.copy_(linear.weight[:, :, None])  # [out, in] → [out, in, 1]
            conv.bias.copy_(linear.bias)
        convs.append(conv)
    return convs[0], convs[1]


def conv1d_feed_forward(ff: PositionwiseFeedForward, x: torch.Tensor) -> torch.Tensor:
    """Seed 001's ``PoswiseFeedForwardNet`` body with ``ff``'s weights (before residual and LayerNorm).

    ``x [batch, pos, d_model]`` → ``conv2(act(conv1(x.transpose(1, 2)))).transpose(1, 2)``.
    """
    conv1, conv2 = conv1d_twin(ff)
    hidden = ff.activation(conv1(x.transpose(1, 2)))  # [batch, d_ff, pos]
    return conv2(hidden).transpose(1, 2)  # [batch, pos, d_model]


def encoder_walkthrough(tokens: tuple[str, ...], config: EncoderConfig, causal: bool) -> dict[str, np.ndarray]:
    """One sentence (batch of one, no padding) through the toy encoder's first layer, every step.

    Captured stages (``capture`` on the encoder) plus the in-between values the modules
    compute without a hook point, each computed by the module's own layer:

    ``x`` ``[1, pos, d_model]``; ``xW_Q``, ``xW_K``, ``xW_V`` ``[1, pos, d_model]`` (before the split);
    ``q``, ``k``, ``v``, ``context`` ``[1, head, pos, d_k]``; ``scores``, ``masked_scores``,
    ``weights`` ``[1, head, pos, pos]``; ``concat``, ``projected``, ``dropped`` (dropout of
    ``projected``: the identity at inference), ``attn_residual`` (``x + dropped``),
    ``attn_output`` (after LayerNorm); ``ff_hidden`` ``[1, pos, d_ff]``; ``ff_linear``
    (``W_2`` of hidden), ``ff_conv1d`` (the same through seed 001's Conv1d pair),
    ``ff_residual``, ``ff_output`` ``[1, pos, d_model]``; ``mask`` bool ``[pos, pos]``; and the
    block's parameters ``W_O`` ``[d_model, d_model]`` (``nn.Linear`` layout: out × in), ``b_O``,
    ``ln_gamma``, ``ln_beta`` ``[d_model]`` and ``ln_eps`` (for :func:`~transformer_core.analysis.explain.explain_position`).
    """
    n = len(tokens)
    if n == 0:
        raise ValueError("no tokens: type at least one word")
    model = Encoder(config).eval()
    layer = model.layers[0]
    mha, ff = layer.attention, layer.feed_forward
    mask = masks.causal_mask(n) if causal else None
    x = embed_tokens((tuple(tokens),), config.d_model, config.seed)  # [1, pos, d_model]
    with torch.no_grad(), capture(model) as stages:
        model(x, mask)
        att = {name.removeprefix("layers.0.attention."): t for name, t in stages.items()
               if name.startswith("layers.0.attention.")}
        attn_out = att["output"]
        dropped = mha.dropout(att["projected"])
        hidden = stages["layers.0.feed_forward.hidden"]
        ff_linear = ff.W_2(hidden)
        steps = {
            "x": x, "xW_Q": mha.W_Q(x), "xW_K": mha.W_K(x), "xW_V": mha.W_V(x),
            **{s: att[s] for s in ("q", "k", "v", "scores", "masked_scores", "weights", "context",
                                   "concat", "projected")},
            "dropped": dropped, "attn_residual": x + dropped, "attn_output": attn_out,
            "ff_hidden": hidden, "ff_linear": ff_linear, "ff_conv1d": conv1d_feed_forward(ff, attn_out),
            "ff_residual": attn_out + ff.dropout(ff_linear), "ff_output": stages["layers.0.feed_forward.output"],
        }
        steps |= {"W_O": mha.W_O.weight, "b_O": mha.W_O.bias, "ln_gamma": mha.norm.weight, "ln_beta": mha.norm.bias}
    out = {name: t.detach().float().numpy() for name, t in steps.items()}
    out["mask"] = (np.ones((n, n), bool) if mask is None else mask.numpy())
    out["ln_eps"] = np.float32(mha.norm.eps)
    return out
