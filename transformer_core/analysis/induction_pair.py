"""The trained causal model intact and with heads ablated, measured in one forward.

The causal page's ablation section shows, for every checkpoint, the loss and induction accuracy on the held-out
repeated sequences intact and with the chosen heads knocked out: :func:`~transformer_core.analysis.ablation.induction.
measure` twice. Both runs read the same 64 sequences, so they can go through the model as one batch of 128 rows: the
sequences, then the same sequences again with the heads ablated (a bool mask ``[layer, row, head]`` that marks the
heads in the second copy only, :meth:`~transformer_core.models.face.Face.intervene`), each half then measured as
``measure`` measures it. Attention never mixes rows of a batch, so each half's logits are those of its own run — the
same numbers (bit for bit on this CPU build, tests/test_causal_forwards.py checks them against a reference) from one
forward instead of two.

Shape legend: layer, row, head.
"""
from __future__ import annotations

from collections.abc import Iterable

import torch

from ..nn.head_ablation import Head, head_mask
from .ablation.induction import HELD_OUT, InductionAccuracy, causal_reference, held_out_sequences
from .ablation.ranking import check_heads


def measure_intact_and_ablated(face, heads: Iterable[Head], *, mode: str = "zero",
                               reference: dict | None = None) -> tuple[dict, dict]:
    """``(measure(face), measure(face, heads, mode=mode, reference=reference))`` of
    :mod:`~transformer_core.analysis.ablation.induction` on the causal model's ``face`` (a checkpoint), from one
    forward over the held-out batch twice, the second copy with ``heads`` ablated. Each is ``{"loss": {"first",
    "repeat", "all"} (nats), "accuracy": {"first", "repeat"}, "chance": 1/vocab, "n_repeat"}``.

    Raises:
        ValueError: a head the model does not have, a bad mode.
    """
    heads = check_heads(heads, face.config)
    model = face.module
    ids = held_out_sequences(model.vocab_size, **HELD_OUT)  # [row, pos]
    m = InductionAccuracy(ids, HELD_OUT["period"])
    means = causal_reference(model, reference) if mode == "mean" and heads else None
    rows = ids.shape[0]
    cut = head_mask(heads, face.config.n_layers, face.config.n_heads).expand(-1, rows, -1)  # [layer, row, head]
    mask = torch.cat([torch.zeros_like(cut), cut], dim=1)  # the first copy intact, the second ablated
    with torch.no_grad(), face.intervene(mask, mode if heads else "zero", real=m.real, reference=means):
        logits = m.run(face, 2)  # [2·row, pos, vocab]
    intact, ablated = (m.summary(part) for part in logits.split(rows))
    return intact, ablated
