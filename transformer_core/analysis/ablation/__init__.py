"""Head ablation: knock attention heads out and measure what changes — one analysis for every model.

A head's *context* ``[batch, head, query_pos, d_head]`` (its weights times its values, before the heads are
concatenated and projected by W_O) is replaced (:data:`MODE_DEFINITIONS`, :mod:`transformer_core.nn.head_ablation`):

* ``"zero"`` — by 0, what Hugging Face ``BertModel``'s ``head_mask`` did (Michel et al., "Are Sixteen Heads Really
  Better than One?", 2019). transformers 5 dropped ``head_mask`` and ignores it silently; the tests zero the head's
  slice of the attention output's input with a forward hook instead;
* ``"mean"`` — by its mean over a named **reference set** of inputs, per position (:mod:`.references`);
* ``"mean_sentence"`` — this project's earlier variant: by its mean over the *same* sentence's real (non-``[PAD]``)
  tokens, so what the head does per token is removed but what it does for this sentence as a whole stays.

The replacement goes through :func:`~transformer_core.nn.hooks.intervene`: a context variable, private to the calling
thread, so a model shared between sessions is never changed, and nothing happens outside the block.

The package: this core (head lists, masks, :func:`ablate`), :mod:`.references` (reference means and their cache),
:mod:`.ranking` (the one routine that ablates one head at a time or a set of heads, on any model's face, with a
*measure*), and one small measure per kind of model — :mod:`.embedding` (MiniLM's sentence-embedding cosine, with
:mod:`.embedding_reference` for its reference sets), :mod:`.induction` (the causal model's induction accuracy) and
:mod:`.next_token` (a decoder's next-token target probabilities: SmolLM2 and local checkpoints).

Heads are named ``L3H7`` (layer 3, head 7); :func:`parse_heads` reads a list such as ``L3H7,L4H2``.
Shape legend: batch, head, query_pos, key_pos, d_head; pos, d_model.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from ...nn.head_ablation import MODE_DEFINITIONS, MODES, Head, ablate, ablation_edits, copies_mask, head_mask
from ...text.i18n import _
from .ranking import Measure, check_heads, effect, rank_heads
from .references import (REFERENCE_CACHE_BYTES, REFERENCE_TTL_S, ReferenceMeans, cached_reference, clear_references,
                         expire_references, has_reference, pooled_means, record_reference, record_reference_batches,
                         reference_means)

__all__ = [  # the core: head lists and masks, the edits, reference means, the one routine
    "MODES", "MODE_DEFINITIONS", "REFERENCE_CACHE_BYTES", "REFERENCE_TTL_S", "Head", "Measure", "ReferenceMeans",
    "ablate", "ablation_edits", "cached_reference", "check_heads", "clear_references", "copies_mask", "effect",
    "expire_references", "format_heads", "has_reference", "head_mask", "parse_heads", "pooled_means", "rank_heads",
    "record_reference", "record_reference_batches", "reference_means",
]

_HEAD_RE = re.compile(r"L(\d{1,3})H(\d{1,3})")


def parse_heads(text: str | None, n_layers: int, n_heads: int) -> tuple[Head, ...]:
    """``"L3H7,L4H2"`` → ``((3, 7), (4, 2))``: sorted, without repeats; ``""``/``None`` → ``()``.

    Case and spaces do not matter (``l3h7, L4H2``). Raises ``ValueError`` with a one-line message
    naming the bad item and the heads that exist.
    """
    out = set()
    for item in (text or "").replace(" ", "").upper().split(","):
        if not item:
            continue
        match = _HEAD_RE.fullmatch(item)
        if match is None:
            raise ValueError(_("{item!r} is not a head: write L<layer>H<head>, e.g. L3H7").format(item=item[:20]))
        layer, head = int(match.group(1)), int(match.group(2))
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ValueError(_("{item} does not exist: layers 0–{last_layer}, heads 0–{last_head}").format(
                item=item, last_layer=n_layers - 1, last_head=n_heads - 1))
        out.add((layer, head))
    return tuple(sorted(out))


def format_heads(heads: Iterable[Head], sep: str = ",") -> str:
    """``((3, 7), (4, 2))`` → ``"L3H7,L4H2"`` (sorted; ``sep=", "`` for prose: ``"L3H7, L4H2"``)."""
    return sep.join(f"L{layer}H{head}" for layer, head in sorted(set(heads)))
