"""Head ablation on the trained causal model: which heads carry the induction.

Measured on the held-out repeated sequences of :func:`~transformer_core.models.causal.head_scores`
(64 random sequences of period 24 repeated once, seed 12345, never seen in training): the loss on the
first period and on the repeat, and the **induction accuracy** — top-1 accuracy of predicting the
tokens of the second period (targets ``period … length−1``), which only copying from the first period
can get right. A model that cannot copy is at chance there: ``1 / vocab`` (1/64 ≈ 0.016) for a guess
that ignores the context; the accuracy on the *first* period (targets ``1 … period−1``, which nothing
can predict) is that model's own measured chance level, shown beside it.

Elhage et al., "A Mathematical Framework for Transformer Circuits" (2021); Olsson et al., "In-context
Learning and Induction Heads" (2022): the layer-1 induction heads copy, fed by the layer-0
previous-token head (K-composition).

Mean ablation (``mode="mean"``) replaces a head's context by its mean, per position, over the reference
set :data:`REFERENCE` (:data:`REFERENCE_NAME`: another draw of the same kind of sequence, seed 2024, not
the held-out one); positions beyond its length 48 get the mean over all its positions. ``"mean_sentence"``
(this project's earlier mean) averages over the ablated sequence's own positions — in a causal model that
puts later positions' information into earlier ones. Shape legend: batch, pos, vocab.
"""
from __future__ import annotations

from collections.abc import Iterable

import torch

from ..models.causal import CausalLM, repeated_tokens, token_losses
from .ablation import Head, ReferenceMeans, ablate, cached_reference, record_reference

HELD_OUT = {"batch": 64, "period": 24, "length": 48, "seed": 12345}  # as head_scores
REFERENCE = {"batch": 64, "period": 24, "length": 48, "seed": 2024}  # the mean ablation's default reference set
REFERENCE_NAME = "64 random sequences of period 24 repeated once, seed 2024"


def held_out_sequences(vocab_size: int, *, batch: int = 64, period: int = 24, length: int = 48,
                       seed: int = 12345) -> torch.Tensor:
    """``[batch, length]`` long: the held-out repeated sequences of ``head_scores`` (same draw)."""
    return repeated_tokens(batch, period, length, vocab_size, torch.Generator().manual_seed(seed))


def causal_reference(model: CausalLM, reference: dict | None = None) -> ReferenceMeans:
    """Each head's mean context over the reference sequences (default :data:`REFERENCE`; a dict with ``batch``,
    ``period``, ``length``, ``seed``), per position: the ``"mean"`` ablation's replacement. Once per model."""
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


def measure(model: CausalLM, heads: Iterable[Head] = (), *, mode: str = "zero", batch: int = 64,
            period: int = 24, length: int = 48, seed: int = 12345, reference: dict | None = None) -> dict:
    """Loss (nats) and top-1 accuracy on the held-out sequences with ``heads`` ablated (``()`` = intact).

    ``mode="mean"`` replaces a head's context by its per-position mean over ``reference`` (default
    :data:`REFERENCE`; see :func:`causal_reference`);
    ``"mean_sentence"`` by its mean over the sequence's own positions (which, in a causal model, averages in
    later positions too). Returns ``{"loss": {"first", "repeat", "all"},
    "accuracy": {"first", "repeat"}, "chance": 1/vocab, "n_repeat": predictions in the repeat}``.
    """
    ids = held_out_sequences(model.vocab_size, batch=batch, period=period, length=length, seed=seed)
    heads = tuple(heads)
    means = causal_reference(model, reference) if mode == "mean" and heads else None
    with torch.no_grad(), ablate(model, heads, mode, reference=means):
        logits = model(ids)
    losses = token_losses(logits, ids)  # [batch, pos−1]
    return {"loss": {"first": float(losses[:, :period - 1].mean()), "repeat": float(losses[:, period - 1:].mean()),
                     "all": float(losses.mean())},
            "accuracy": accuracies(logits, ids, period), "chance": 1.0 / model.vocab_size,
            "n_repeat": int(losses[:, period - 1:].numel())}


def ablation_table(model: CausalLM, ablations: dict[str, tuple[Head, ...]], *, mode: str = "zero") -> list[dict]:
    """One row per named ablation (``{"intact": (), "layer 1": ((1, 0), …)}``): name, heads, loss and accuracy."""
    rows = []
    for name, heads in ablations.items():
        m = measure(model, heads, mode=mode)
        rows.append({"ablated": name, "loss first": m["loss"]["first"], "loss repeat": m["loss"]["repeat"],
                     "accuracy first": m["accuracy"]["first"], "induction accuracy": m["accuracy"]["repeat"]})
    return rows
