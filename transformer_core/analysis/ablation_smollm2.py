"""Kept for ui/llm until it moves: the old names of the decoders' ablation and head statistics.

The ablation is :mod:`transformer_core.analysis.ablation.next_token`; the head statistics are
:func:`transformer_core.analysis.head_stats.decoder_head_stats` and :func:`~transformer_core.analysis.head_stats.
sink_share`. Nothing here but those names.
"""
from __future__ import annotations

from .ablation.next_token import (IOI_PROMPT, REFERENCE_SETS, TARGETS, ablation_effect, rank_heads,  # noqa: F401
                                  target_ids)
from .head_stats import decoder_head_stats as head_stats_smollm2  # noqa: F401
from .head_stats import sink_share  # noqa: F401
