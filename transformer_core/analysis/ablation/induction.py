"""Head ablation on the trained causal model: which heads carry the induction.

Measured on the held-out repeated sequences of :func:`~transformer_core.models.causal.head_scores` (64 random
sequences of period 24 repeated once, seed 12345, never seen in training): the loss on the first period and on the
repeat, and the **induction accuracy** — top-1 accuracy of predicting the tokens of the second period (targets
``period … length−1``), which only copying from the first period can get right. A model that cannot copy is at
chance there: ``1 / vocab`` (1/64 ≈ 0.016) for a guess that ignores the context; the accuracy on the *first* period
(targets ``1 … period−1``, which nothing can predict) is that model's own measured chance level, shown beside it.

Elhage et al., "A Mathematical Framework for Transformer Circuits" (2021); Olsson et al., "In-context Learning and
Induction Heads" (2022): the layer-1 induction heads copy, fed by the layer-0 previous-token head (K-composition).

Mean ablation (``mode="mean"``) replaces a head's context by its mean, per position, over the reference set
:data:`REFERENCE` (:data:`REFERENCE_NAME`: another draw of the same kind of sequence, seed 2024, not the held-out
one); positions beyond its length 48 get the mean over all its positions. ``"mean_sentence"`` (this project's earlier
mean) averages over the ablated sequence's own positions — in a causal model that puts later positions' information
into earlier ones. :class:`InductionAccuracy` is this model's measure for
:mod:`~transformer_core.analysis.ablation.ranking`. Shape legend: copy, batch, pos, vocab.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch

from ...models.causal import repeated_tokens, token_losses
from ...nn.head_ablation import Head
from . import ranking
from .references import ReferenceMeans, cached_reference, record_reference

HELD_OUT = {"batch": 64, "period": 24, "length": 48, "seed": 12345}  # as head_scores
REFERENCE = {"batch": 64, "period": 24, "length": 48, "seed": 2024}  # the mean ablation's default reference set
REFERENCE_NAME = "64 random sequences of period 24 repeated once, seed 2024"


def held_out_sequences(vocab_size: int, *, batch: int = 64, period: int = 24, length: int = 48,
                       seed: int = 12345) -> torch.Tensor:
    """``[batch, length]`` long: the held-out repeated sequences of ``head_scores`` (same draw)."""
    return repeated_tokens(batch, period, length, vocab_size, torch.Generator().manual_seed(seed))


def causal_reference(model, reference: dict | None = None) -> ReferenceMeans:
    """Each head's mean context over the reference sequences (default :data:`REFERENCE`; a dict with ``batch``,
    ``period``, ``length``, ``seed``), per position: the ``"mean"`` ablation's replacement. Once per model (the
    :class:`~transformer_core.models.causal.CausalLM` module)."""
    reference = dict(REFERENCE if reference is None else reference)
    name = REFERENCE_NAME if reference == REFERENCE else (
        "{batch} random sequences of period {period}, length {length}, seed {seed}".format(**reference))

    def make() -> ReferenceMeans:
        ids = held_out_sequences(model.vocab_size, **reference)
        return record_reference(model, lambda m: m(ids), torch.ones_like(ids, dtype=torch.bool), name)

    return cached_reference(model, ("causal", tuple(sorted(reference.items()))), make)


def accuracies(logits: torch.Tensor, input_ids: torch.Tensor, period: int) -> dict:
    """Top-1 accuracy of predicting token t+1 from row t: ``{"first": targets 1…period−1, "repeat":
    targets period…pos−1}``. ``logits [batch, pos, vocab]``, ``input_ids [batch, pos]``."""
    hit = (logits[:, :-1].argmax(-1) == input_ids[:, 1:]).float()  # [batch, pos−1]; entry t predicts t+1
    return {"first": float(hit[:, :period - 1].mean()), "repeat": float(hit[:, period - 1:].mean())}


class InductionAccuracy:
    """The causal model's measure (:class:`~transformer_core.analysis.ablation.ranking.Measure`) on ``ids``
    ``[batch, pos]``, repeated sequences of ``period``: a run gives the logits ``[copies·batch, pos, vocab]``; a
    copy compares by its induction accuracy and its loss on the repeat (``[copies, 2]``: accuracy, nats)."""

    real = None  # every position is a token

    def __init__(self, ids: torch.Tensor, period: int) -> None:
        self.ids, self.period, self.rows = ids, period, ids.shape[0]

    def intact(self, face) -> torch.Tensor:
        return self.run(face)

    def run(self, face, copies: int = 1, *, layer: int | None = None, intact=None) -> torch.Tensor:
        return face.module(self.ids.repeat(copies, 1))

    def summary(self, logits: torch.Tensor) -> dict:
        """Loss (nats) and accuracy of one run ``[batch, pos, vocab]`` (see :func:`measure`)."""
        losses = token_losses(logits, self.ids)  # [batch, pos−1]
        p = self.period
        return {"loss": {"first": float(losses[:, :p - 1].mean()), "repeat": float(losses[:, p - 1:].mean()),
                         "all": float(losses.mean())},
                "accuracy": accuracies(logits, self.ids, p), "chance": 1.0 / logits.shape[-1],
                "n_repeat": int(losses[:, p - 1:].numel())}

    def compare(self, intact, ablated: torch.Tensor, copies: int) -> np.ndarray:
        rows = [self.summary(part) for part in ablated.split(self.rows)]
        return np.array([[r["accuracy"]["repeat"], r["loss"]["repeat"]] for r in rows])

    def group(self, n_heads: int) -> int:
        return n_heads


def measure(face, heads: Iterable[Head] = (), *, mode: str = "zero", batch: int = 64, period: int = 24,
            length: int = 48, seed: int = 12345, reference: dict | None = None) -> dict:
    """Loss (nats) and top-1 accuracy on the held-out sequences with ``heads`` ablated (``()`` = intact), on the
    causal model's ``face`` (:class:`~transformer_core.models.face.CausalFace`: its checkpoint).

    ``mode="mean"`` replaces a head's context by its per-position mean over ``reference`` (default
    :data:`REFERENCE`; see :func:`causal_reference`); ``"mean_sentence"`` by its mean over the sequence's own
    positions (which, in a causal model, averages in later positions too). Returns ``{"loss": {"first", "repeat",
    "all"}, "accuracy": {"first", "repeat"}, "chance": 1/vocab, "n_repeat": predictions in the repeat}``.

    Raises:
        ValueError: a head the model does not have, a bad mode.
    """
    model = face.module
    ids = held_out_sequences(model.vocab_size, batch=batch, period=period, length=length, seed=seed)
    heads = tuple(heads)
    means = causal_reference(model, reference) if mode == "mean" and heads else None
    m = InductionAccuracy(ids, period)
    return m.summary(ranking.effect(face, m, heads, mode=mode, reference=means))


def rank_heads(face, *, mode: str = "zero", reference: dict | None = None) -> dict:
    """Ablate each head alone (:func:`~transformer_core.analysis.ablation.ranking.rank_heads`; one pass per layer,
    the 64 held-out sequences once per head): ``{"accuracy": [layer, head] induction accuracy, "loss": [layer, head]
    loss on the repeat (nats), "intact": :func:`measure` of the intact model}``."""
    model = face.module
    m = InductionAccuracy(held_out_sequences(model.vocab_size, **HELD_OUT), HELD_OUT["period"])
    means = causal_reference(model, reference) if mode == "mean" else None
    ranked = ranking.rank_heads(face, m, mode=mode, reference=means)
    return {"accuracy": ranked["values"][..., 0], "loss": ranked["values"][..., 1],
            "intact": m.summary(ranked["intact"])}


def ablation_table(face, ablations: dict[str, tuple[Head, ...]], *, mode: str = "zero") -> list[dict]:
    """One row per named ablation (``{"intact": (), "layer 1": ((1, 0), …)}``): name, heads, loss and accuracy."""
    rows = []
    for name, heads in ablations.items():
        m = measure(face, heads, mode=mode)
        rows.append({"ablated": name, "loss first": m["loss"]["first"], "loss repeat": m["loss"]["repeat"],
                     "accuracy first": m["accuracy"]["first"], "induction accuracy": m["accuracy"]["repeat"]})
    return rows
