"""The one ablation routine: run a model's face with heads knocked out, or each head alone, and let a *measure* say
what changed.

A :class:`Measure` holds one input and knows three things about one kind of model: what an intact run gives
(:meth:`Measure.intact`), what a run gives under whatever ablation is active (:meth:`Measure.run`, on ``copies``
copies of its input stacked as one batch), and how an ablated run compares with the intact one
(:meth:`Measure.compare`). The routines here know the rest, for any model of :mod:`transformer_core.models`: which
heads exist (``face.config``), how to knock them out (``face.intervene``: zero, a reference mean or the sentence's
mean) and how to rank every head by batching one layer's heads into copies of the input, copy i ablating head i.

The measures: :class:`~transformer_core.analysis.ablation.embedding.EmbeddingCosine` (MiniLM's sentence embedding),
:class:`~transformer_core.analysis.ablation.induction.InductionAccuracy` (the causal model's repeated sequences) and
:class:`~transformer_core.analysis.ablation.next_token.NextToken` (a decoder's next-token target probabilities).
Shape legend: layer, head, copy, batch (rows of the input), pos.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

import numpy as np
import torch

from ...nn.head_ablation import Head, check_mode, copies_mask


class Measure(Protocol):
    """What one kind of model's ablation measures, on the one input the measure holds.

    ``rows``: the input's rows (sentences, sequences); ``real``: bool ``[rows, pos]``, ``True`` = a real token (the
    ``"mean_sentence"`` mode averages over them), or ``None`` (every position is real).
    """

    rows: int
    real: torch.Tensor | None

    def intact(self, face) -> object:
        """The intact run, once per ranking: what :meth:`compare` compares with (and what :meth:`run` may start
        from)."""

    def run(self, face, copies: int = 1, *, layer: int | None = None, intact=None) -> object:
        """The model on ``copies`` copies of the input (one batch, copy after copy), under the ablation active now.
        ``layer``: the only layer the ablation touches, when the ranking knows it (``None``: any), with ``intact``
        (what :meth:`intact` gave): a measure may start from the intact run's residual stream entering that layer."""

    def compare(self, intact, ablated, copies: int) -> np.ndarray:
        """``[copies, …]``: copy i of ``ablated`` against ``intact``."""

    def group(self, n_heads: int) -> int:
        """How many of a layer's heads one batched pass ablates (memory: the batch grows with each copy)."""


def check_heads(heads: Iterable[Head], config) -> tuple[Head, ...]:
    """``heads`` sorted, without repeats.

    Raises:
        ValueError: a head the model (``config``: a :class:`~transformer_core.models.face.ModelConfig`) does not
            have; the message names the heads that exist.
    """
    heads = tuple(sorted({(int(layer), int(head)) for layer, head in heads}))
    for layer, head in heads:
        if not (0 <= layer < config.n_layers and 0 <= head < config.n_heads):
            raise ValueError(f"L{layer}H{head} does not exist: layers 0–{config.n_layers - 1}, "
                             f"heads 0–{config.n_heads - 1}")
    return heads


def effect(face, measure: Measure, heads: Iterable[Head] = (), *, mode: str = "zero", reference=None) -> object:
    """``measure.run(face)`` with ``heads`` (``[(layer, head)]``; ``()`` = intact) knocked out by ``mode`` (one of
    :data:`~transformer_core.nn.head_ablation.MODE_DEFINITIONS`; ``reference``: the ``"mean"`` mode's means), in this
    thread only.

    Raises:
        ValueError: a head the model does not have, a bad mode, ``"mean"`` without ``reference``.
    """
    heads = check_heads(heads, face.config)
    check_mode(mode)
    with torch.no_grad(), face.intervene(heads, mode, real=measure.real, reference=reference):
        return measure.run(face)


def rank_heads(face, measure: Measure, *, mode: str = "zero", reference=None,
               progress: Callable[[int, int], None] | None = None) -> dict:
    """Ablate each head of ``face`` alone and compare with the intact run (``measure.compare``).

    One batched pass per group of a layer's heads (``measure.group``): the input repeated once per head, copy i
    ablating head i of that layer only. ``progress(done, total)`` after each pass.

    Returns ``{"values": [n_layers, n_heads, …] (the comparison of head (layer, head)'s ablation), "intact": what
    ``measure.intact`` gave}``.

    Raises:
        ValueError: a bad mode, ``"mean"`` without ``reference``.
    """
    check_mode(mode)
    c = face.config
    with torch.no_grad():
        intact = measure.intact(face)
    group = int(max(1, min(c.n_heads, measure.group(c.n_heads))))
    passes = [(layer, list(range(h, min(c.n_heads, h + group)))) for layer in range(c.n_layers)
              for h in range(0, c.n_heads, group)]
    values = None
    for done, (layer, heads) in enumerate(passes, 1):
        k = len(heads)
        mask = copies_mask(c.n_layers, c.n_heads, layer, heads, measure.rows)
        real = None if measure.real is None else measure.real.repeat(k, 1)
        with torch.no_grad(), face.intervene(mask, mode, real=real, reference=reference):
            ablated = measure.run(face, k, layer=layer, intact=intact)
        compared = np.asarray(measure.compare(intact, ablated, k))
        if values is None:
            values = np.zeros((c.n_layers, c.n_heads, *compared.shape[1:]), dtype=compared.dtype)
        values[layer, heads] = compared
        if progress is not None:
            progress(done, len(passes))
    return {"values": values, "intact": intact}
