"""Kept for ui/llm until it moves: the old names of the decoders' generation, now
:mod:`transformer_core.analysis.generation` (one loop for every model). Nothing here but those names."""
from __future__ import annotations

from .generation import TOP, generate, greedy_ids, stream  # noqa: F401
