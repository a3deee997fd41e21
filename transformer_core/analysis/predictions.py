"""Next-token probabilities: temperature, top-k, top-p — what every model's sampling draws from.

``p = softmax(logits / T)`` — the temperature divides the *logits* (never log-probabilities:
``log_softmax(z) / T`` is the same up to a constant per row, so softmax would agree, but a
``log_softmax`` of already-divided numbers would not; we keep the one definition). Computed in
float64 with the row maximum subtracted *before* dividing by T, so every exponent is ≤ 0: no overflow
at any T > 0, and as T → 0 every token but the argmax underflows to exactly 0 (T = 0.01 is finite;
Transformer Explainer had to remove 0.05 and 0.1 for "error in Math.exp()"). Ties at the maximum
share its probability.

Top-k keeps the k most probable tokens; top-p (nucleus, Holtzman et al., "The Curious Case of Neural
Text Degeneration", 2020) keeps the smallest set of most probable tokens whose probabilities add up to
at least p. With both, the order is named (:data:`FILTER_ORDERS`):

* ``"hf"`` (default) — Hugging Face's: top-k, renormalise the k kept, then top-p on those renormalised
  probabilities (``TopKLogitsWarper`` → ``TopPLogitsWarper``, the order ``generate`` applies them);
* ``"both"`` — the tokens both filters keep, each judged on the original probabilities (this project's
  earlier rule): top-p then reaches p only with the original mass, so it keeps as many or more tokens.

Example: p = [.30, .25, .20, .15, .10], k = 2, top-p = 0.5: ``"hf"`` keeps one token (renormalised
.545 ≥ .5), sampling from [1, 0, 0, 0, 0]; ``"both"`` keeps two, sampling from [.545, .455, 0, 0, 0].
:func:`top_tokens` shows the kept tokens (with their probabilities before filtering) and the rest as one
"other" bar, so the bars add up to 1; sampling (:mod:`~transformer_core.analysis.generation`, one loop for the
causal model and the decoders) draws from the kept tokens renormalised, from a local ``torch.Generator``.

Shape legend: pos, vocab.
"""
from __future__ import annotations

import math

import numpy as np
import torch

T_MIN, T_MAX = 0.01, 100.0  # the range the app and the export command offer
FILTER_ORDERS = {  # how top-k and top-p combine → one line on what it does (English; see the module docstring)
    "hf": "top-k, renormalise, then top-p (Hugging Face's TopKLogitsWarper → TopPLogitsWarper)",
    "both": "tokens both top-k and top-p keep, each on the original probabilities",
}


def check_temperature(temperature: float) -> float:
    """``temperature`` as a float; raises ``ValueError`` unless it is finite and > 0."""
    t = float(temperature)
    if not math.isfinite(t) or t <= 0:
        raise ValueError(f"temperature must be a finite number above 0, got {temperature!r}")
    return t


def softmax_t(logits: np.ndarray | torch.Tensor, temperature: float = 1.0) -> np.ndarray:
    """``softmax(logits / T)`` over the last axis, float64, never NaN or inf for finite logits.

    Raises:
        ValueError: T is not a finite number above 0, or a logit is not finite.
    """
    t = check_temperature(temperature)
    z = np.asarray(logits.detach().cpu().numpy() if isinstance(logits, torch.Tensor) else logits, dtype=np.float64)
    if not np.isfinite(z).all():
        raise ValueError("logits must be finite")
    shifted = (z - z.max(axis=-1, keepdims=True)) / t  # ≤ 0 everywhere, 0 at the maximum
    e = np.exp(shifted)  # in [0, 1]; the maximum gives 1, so the sum is ≥ 1
    return e / e.sum(axis=-1, keepdims=True)


def kept(probs: np.ndarray, k: int | None = None, p: float | None = None, order: str = "hf") -> np.ndarray:
    """Indices of the tokens top-k and top-p keep, most probable first (ties: lower id first).

    ``k`` None = all; ``p`` None = no nucleus cut. ``probs``: ``[vocab]``. ``order`` (:data:`FILTER_ORDERS`):
    ``"hf"`` judges top-p on the k kept tokens renormalised, ``"both"`` on the original probabilities.

    Raises:
        ValueError: ``k`` < 1, ``p`` not in (0, 1], or an unknown order.
    """
    if k is not None and k < 1:
        raise ValueError(f"top-k must be at least 1, got {k}")
    if p is not None and not 0 < p <= 1:
        raise ValueError(f"top-p must be in (0, 1], got {p}")
    if order not in FILTER_ORDERS:
        raise ValueError(f"order must be one of {', '.join(FILTER_ORDERS)}, got {order!r}")
    probs = np.asarray(probs, np.float64)
    idx = np.lexsort((np.arange(len(probs)), -probs))  # by probability, then by id
    if k is not None:
        idx = idx[:k]
    if p is not None:
        cum = np.cumsum(probs[idx])
        if order == "hf" and cum[-1] > 0:
            cum = cum / cum[-1]  # the k kept, renormalised (Hugging Face's TopKLogitsWarper, then softmax)
        idx = idx[:int(np.searchsorted(cum, p - 1e-12)) + 1]  # smallest prefix reaching p
    return idx


def top_tokens(probs: np.ndarray, k: int | None = 10, p: float | None = None,
               order: str = "hf") -> list[tuple[str, float]]:
    """``[(token, probability), …, ("other", rest)]`` for one position's ``probs [vocab]``: the kept
    tokens (see :func:`kept`) and the sum of all the others as ``"other"`` (left out when 0), so the
    probabilities (before filtering) add up to 1."""
    idx = kept(probs, k, p, order)
    rest = np.ones(len(probs), bool)
    rest[idx] = False
    out = [(str(int(i)), float(probs[i])) for i in idx]
    other = float(probs[rest].sum())
    return out + ([("other", other)] if rest.any() else [])


def sampling_probs(probs: np.ndarray, k: int | None = None, p: float | None = None,
                   order: str = "hf") -> np.ndarray:
    """``probs [vocab]`` restricted to the kept tokens (:func:`kept`, ``order``) and renormalised (what
    :func:`~transformer_core.analysis.generation.choose` draws from)."""
    out = np.zeros_like(probs)
    idx = kept(probs, k, p, order)
    out[idx] = probs[idx]
    return out / out.sum()
