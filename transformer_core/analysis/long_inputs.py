"""Long inputs: a sliding window of keys, with or without attention sinks, on SmolLM2 and in bytes.

A sliding window of width ``w`` (:func:`~transformer_core.nn.masks.sliding_window_mask`) lets each query see only
itself and the ``w − 1`` keys before it, so a KV cache never needs more than ``w`` rows per layer (Mistral 7B, Jiang
et al. 2023 §2, keeps a rolling cache of that size). Xiao et al., "Efficient Streaming Language Models with Attention
Sinks" (2024), §3.1–3.2, found that trained models put much attention on the first tokens whatever they say; once
the window has moved past them, predictions break down, and keeping the first few (the *sinks*) in view repairs
most of it.

:func:`window_predictions` runs SmolLM2 on one text three ways — every earlier key (the trained causal mask), a
window that has moved past the first token, and the same window with the first ``sinks`` tokens kept — and gives the
last position's top-5 for each. The two windowed runs are one batched forward pass (a mask per batch row), and the
unwindowed logits may be passed in from an earlier run (they do not depend on the window). The window is applied to the scores of every layer through
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


def windowed_batch_logits(model, ids: list[int], masks: list[tuple[int, int]]) -> torch.Tensor:
    """The last position's logits ``[len(masks), vocab]`` of ``ids`` under each ``(window, sinks)`` of ``masks``, in
    one forward pass: batch row ``b`` repeats ``ids`` and every layer blocks its scores outside row ``b``'s window.
    Row ``b`` equals :func:`windowed_last_logits` with that window (to float rounding of a batched matmul).

    Raises:
        ValueError: no token, no mask, or a bad window / sinks (see :func:`sliding_window_mask`).
    """
    if not ids:
        raise ValueError("no tokens: type a text")
    if not masks:
        raise ValueError("give at least one (window, sinks)")
    keep = torch.stack([sliding_window_mask(len(ids), window=w, sinks=s) for w, s in masks])[:, None]  # [b, 1, q, k]

    def blocked(scores: torch.Tensor) -> torch.Tensor:  # [b, head, query_pos, key_pos]
        return scores.masked_fill(~keep, float("-inf"))

    edits = {f"layers.{i}.attention.masked_scores": blocked for i in range(len(model.layers))}
    with torch.no_grad(), intervene(model, edits):
        return model(torch.tensor([ids] * len(masks)), last_only=True)[:, -1]


def top(logits: torch.Tensor, k: int = TOP) -> list[tuple[int, float]]:
    """The ``k`` most probable ``(id, probability)`` under softmax of ``logits``, most probable first."""
    probs = torch.softmax(logits.double(), dim=-1)
    best = probs.topk(k)
    return [(int(i), float(p)) for p, i in zip(best.values, best.indices)]


def window_predictions(model, ids: list[int], window: int, sinks: int = 1,
                       full_logits: torch.Tensor | None = None) -> dict:
    """The last position's top-5 under the full causal mask, under a window of ``window`` keys, and under the window
    plus ``sinks`` first tokens. ``full_logits`` ``[vocab]``: :func:`windowed_last_logits` with ``window=None``,
    when the caller has it (it is computed otherwise). The two windows are one batched pass; with ``sinks=0`` they
    are the same window, run once.

    Returns ``{"full", "window", "sinks": [(id, prob)] × 5 each, "kl_window", "kl_sinks": KL(full ‖ that run) in
    nats over the whole vocabulary, "same_top1_window", "same_top1_sinks": bool, "dropped": how many first tokens the
    last query no longer sees with the window, "window_size", "n_sinks"}``.

    Raises:
        ValueError: ``window`` is not below the number of tokens (it would drop nothing), or bad window / sinks.
    """
    if not 1 <= window < len(ids):
        raise ValueError(f"the window must be 1 … {len(ids) - 1} tokens to drop any, got {window}")
    full = windowed_last_logits(model, ids, None) if full_logits is None else full_logits
    both = windowed_batch_logits(model, ids, [(window, 0)] + ([(window, sinks)] if sinks else []))
    runs = {"full": full, "window": both[0], "sinks": both[-1]}
    logp = {name: torch.log_softmax(v.double(), dim=-1) for name, v in runs.items()}
    out = {name: top(v) for name, v in runs.items()}
    for name in ("window", "sinks"):
        out[f"kl_{name}"] = float((logp["full"].exp() * (logp["full"] - logp[name])).sum())
        out[f"same_top1_{name}"] = out[name][0][0] == out["full"][0][0]
    out.update(dropped=len(ids) - window, window_size=window, n_sinks=sinks)
    return out


def window_run(model, ids: list[int], window: int, sinks: int, label, full_logits=None) -> dict:
    """:func:`window_predictions` with each top-5 entry as ``(label(id), id, probability)`` and ``"mask"``: the
    window's mask ``[query_pos, key_pos]`` (True = may attend) as a NumPy array, for the page, the CLI or a notebook.
    ``label``: token id → its text (the long-inputs tab writes a space as ␣). ``full_logits`` ``[vocab]``: a tensor
    or array (copied: a cached array may be read-only)."""
    full = None if full_logits is None else torch.tensor(full_logits)
    out = window_predictions(model, ids, window, sinks, full_logits=full)
    for key in ("full", "window", "sinks"):
        out[key] = [(label(i), i, p) for i, p in out[key]]
    out["mask"] = sliding_window_mask(len(ids), window=window, sinks=sinks).numpy()
    return out


def cache_rows_needed(n_tokens: int, window: int | None, sinks: int = 0) -> int:
    """Key rows per layer a cache must keep to produce the next token: all of them without a window, else at most
    ``window + sinks``."""
    return n_tokens if window is None else min(n_tokens, window + sinks)
