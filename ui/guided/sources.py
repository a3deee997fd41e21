"""The cached computations a lesson reads, handed over by the page (a room never imports another page's room)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Sources:
    """Callables of the pages' caches: ``toy(settings)`` → Trace; ``causal(ids, step, causal)`` → Trace and
    ``sequence(period, seed)`` → token ids (the causal page's); ``llm_summary(prompt)``, ``llm_layer(prompt,
    layer)`` and ``llm_attribution(prompt, target, contrast)`` (the SmolLM2 page's)."""

    toy: Callable
    causal: Callable
    sequence: Callable
    llm_summary: Callable
    llm_layer: Callable
    llm_attribution: Callable
