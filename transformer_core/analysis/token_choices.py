"""Which tokens to offer when asking what the heads write for a token, and how to name a token briefly.

A byte-level BPE (SmolLM2's, LLaMA's) spells a character it has no token for as byte pieces (``<0xE4><0xBB>``); a
piece alone is not a word a learner can pick, so the default contrast is a *whole* token of the prompt, the one whose
unembedding row (W_U) points closest to the target's (cosine): " Mary" → " John", " Berlin" → " Paris".

Shape legend: vocab, d_model, choice (the ids offered).
"""
from __future__ import annotations

import torch

from ..text.i18n import _

BYTE_MARK = "<0x"  # how a byte piece's label starts (transformer_core.models.smollm2_trace.encode_labels)


def is_byte_piece(label: str) -> bool:
    """Whether a token's label holds bytes of a character the token alone does not complete."""
    return BYTE_MARK in label


def nearest_by_unembedding(unembedding: torch.Tensor, ids: list[int], candidates) -> dict[int, int | None]:
    """For every id of ``ids``, the other id of ``ids`` that is in ``candidates`` and whose row of ``unembedding``
    ``[vocab, d_model]`` has the largest cosine with its own (float64; a tie goes to the larger id); None when no
    other candidate is offered."""
    with torch.no_grad():
        rows = torch.nn.functional.normalize(unembedding[ids].double(), dim=-1)  # [choice, d_model]
        cosine = (rows @ rows.T).numpy()
    allowed = set(candidates)
    nearest = {}
    for a, i in enumerate(ids):
        others = [(cosine[a, b], j) for b, j in enumerate(ids) if j != i and j in allowed]
        nearest[i] = max(others)[1] if others else None
    return nearest


def offered(top_ids: list[int], prompt_ids: list[int]) -> tuple[list[int], list[int]]:
    """The ids offered, each once: the top predictions, then the prompt's own tokens; and the prompt's own ids (each
    once, in order), the only ones a default contrast is taken from."""
    own = list(dict.fromkeys(int(i) for i in prompt_ids))
    return list(dict.fromkeys([int(i) for i in top_ids] + own)), own


def readable(label: str) -> str:
    """``label`` of one token, saying in the current language when it holds bytes of a character that the token
    alone does not complete (``<0xE4><0xBB>`` → ``<0xE4><0xBB> (part of a character)``)."""
    return _("{piece} (part of a character)").format(piece=label) if is_byte_piece(label) else label


def short_label(label: str) -> str:
    """A token's label for a small cell: a byte piece is ``‹bytes›`` (its full label would not fit)."""
    return _("‹bytes›") if is_byte_piece(label) else label
