"""Long inputs: a sliding window of keys, with or without attention sinks, on SmolLM2 and in bytes.

A sliding window of width ``w`` (:func:`~transformer_core.nn.masks.sliding_window_mask`) lets each query see only
itself and the ``w − 1`` keys before it, so a KV cache never needs more than ``w`` rows per layer (Mistral 7B, Jiang
et al. 2023 §2, keeps a rolling cache of that size). Xiao et al., "Efficient Streaming Language Models with Attention
Sinks" (2024), §3.1–3.2, found that trained models put much attention on the first tokens whatever they say; once
the window has moved past them, predictions break down, and keeping the first few (the *sinks*) in view repairs
most of it.

:func:`window_predictions` runs SmolLM2 on one text three ways — every earlier key (the trained causal mask), a
window that has moved past the first token, and the same window with the first ``sinks`` tokens kept — and gives the
last position's top-5 for each. The window is applied to the scores of every layer through
:func:`~transformer_core.nn.hooks.intervene` (a blocked score becomes −inf before the softmax); positions (RoPE
angles) stay the tokens' own, as with a masked window, not re-numbered inside a rolling cache as Xiao et al. do.

Shape legend: pos, query_pos, key_pos, vocab.
"""
from __future__ import annotations

import torch

from ..nn.hooks import intervene
from ..nn.masks import sliding_window_mask

TOP = 5


def windowed_last_logits(model, ids: list[int], window: int | None, sinks: int = 0) -> torch.Tensor:
    """SmolLM2's logits ``[vocab]`` at the last position of ``ids`` when every layer's queries see only a sliding
    window of ``window`` keys plus the first ``sinks`` (``window=None``: the plain causal mask).

    Raises:
        ValueError: no token, or a bad window / sinks (see :func:`sliding_window_mask`).
    """
    if not ids:
        raise ValueError("no tokens: type a text")
    x = torch.tensor([ids])
    with torch.no_grad():
        if window is None:
            return model(x, last_only=True)[0, -1]
        keep = sliding_window_mask(len(ids), window=window, sinks=sinks)[None, None]  # [1, 1, query_pos, key_pos]

        def blocked(scores: torch.Tensor) -> torch.Tensor:
            return scores.masked_fill(~keep, float("-inf"))

        edits = {f"layers.{i}.attention.masked_scores": blocked for i in range(len(model.layers))}
        with intervene(model, edits):
            return model(x, last_only=True)[0, -1]


def top(logits: torch.Tensor, k: int = TOP) -> list[tuple[int, float]]:
    """The ``k`` most probable ``(id, probability)`` under softmax of ``logits``, most probable first."""
    probs = torch.softmax(logits.double(), dim=-1)
    best = probs.topk(k)
    return [(int(i), float(p)) for p, i in zip(best.values, best.indices)]


def window_predictions(model, ids: list[int], window: int, sinks: int = 1) -> dict:
    """The last position's top-5 under the full causal mask, under a window of ``window`` keys, and under the window
    plus ``sinks`` first tokens.

    Returns ``{"full", "window", "sinks": [(id, prob)] × 5 each, "kl_window", "kl_sinks": KL(full ‖ that run) in
    nats over the whole vocabulary, "same_top1_window", "same_top1_sinks": bool, "dropped": how many first tokens the
    last query no longer sees with the window, "window_size", "n_sinks"}``.

    Raises:
        ValueError: ``window`` is not below the number of tokens (it would drop nothing), or bad window / sinks.
    """
    if not 1 <= window < len(ids):
        raise ValueError(f"the window must be 1 … {len(ids) - 1} tokens to drop any, got {window}")
    runs = {"full": windowed_last_logits(model, ids, None),
            "window": windowed_last_logits(model, ids, window, 0),
            "sinks": windowed_last_logits(model, ids, window, sinks)}
    logp = {name: torch.log_softmax(v.double(), dim=-1) for name, v in runs.items()}
    out = {name: top(v) for name, v in runs.items()}
    for name in ("window", "sinks"):
        out[f"kl_{name}"] = float((logp["full"].exp() * (logp["full"] - logp[name])).sum())
        out[f"same_top1_{name}"] = out[name][0][0] == out["full"][0][0]
    out.update(dropped=len(ids) - window, window_size=window, n_sinks=sinks)
    return out


def cache_rows_needed(n_tokens: int, window: int | None, sinks: int = 0) -> int:
    """Key rows per layer a cache must keep to produce the next token: all of them without a window, else at most
    ``window + sinks``."""
    return n_tokens if window is None else min(n_tokens, window + sinks)
