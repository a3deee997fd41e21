"""Knocking attention heads out: what replaces a head's context, as edits for :func:`~transformer_core.nn.hooks.intervene`.

A head's *context* ``[batch, head, query_pos, d_head]`` (its weights times its values, before the heads are
concatenated and projected by W_O) is replaced (:data:`MODE_DEFINITIONS`):

* ``"zero"`` — by 0, what Hugging Face's ``head_mask`` did (Michel et al., "Are Sixteen Heads Really Better than
  One?", 2019);
* ``"mean"`` — by a reference set's mean: ``reference.at(layer, n_pos)`` gives ``[head, n_pos, d_head]`` (the
  reference means of :mod:`transformer_core.analysis.ablation.references`);
* ``"mean_sentence"`` — by its mean over the same sentence's real tokens.

Everything W_O adds besides the heads (its bias) stays. This module is the one place that turns "these heads, this
mode" into edits; the models' face (:meth:`transformer_core.models.face.Face.intervene`) and the analyses
(:mod:`transformer_core.analysis.ablation`) both come here. Shape legend: layer, batch, head, query_pos, d_head.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator

import torch
from torch import nn

from .hooks import intervene

Head = tuple[int, int]  # (layer, head)
MODE_DEFINITIONS = {  # mode → one line on what replaces the head's context (English)
    "zero": "0 (what Hugging Face's head_mask did)",
    "mean": "its mean over a reference set of inputs, per position (IOI, ACDC, TransformerLens patching)",
    "mean_sentence": "its mean over the same sentence's real tokens (this project's earlier mean ablation)",
}
MODES = tuple(MODE_DEFINITIONS)  # ("zero", "mean", "mean_sentence")


def head_mask(heads: Iterable[Head], n_layers: int, n_heads: int) -> torch.Tensor:
    """bool ``[n_layers, 1, n_heads]``: ``True`` = this head is ablated (for every sentence of the batch)."""
    mask = torch.zeros(n_layers, 1, n_heads, dtype=torch.bool)
    for layer, head in heads:
        mask[layer, 0, head] = True
    return mask


def copies_mask(n_layers: int, n_heads: int, layer: int, heads: list[int], rows: int) -> torch.Tensor:
    """bool ``[n_layers, len(heads)·rows, n_heads]`` for a batch made of ``len(heads)`` copies of an input of
    ``rows`` rows: copy i (rows ``i·rows … (i+1)·rows − 1``) ablates head ``heads[i]`` of ``layer``, nothing else."""
    mask = torch.zeros(n_layers, len(heads) * rows, n_heads, dtype=torch.bool)
    for i, head in enumerate(heads):
        mask[layer, i * rows:(i + 1) * rows, head] = True
    return mask


def _replace(ablated: torch.Tensor, mode: str, real: torch.Tensor | None, layer: int,
             reference) -> Callable[[torch.Tensor], torch.Tensor]:
    """The edit of one layer's context: ``ablated`` bool ``[batch or 1, head]``, ``real`` bool ``[batch, pos]``."""
    cut = ablated[:, :, None, None]  # [batch|1, head, 1, 1]

    def edit(context: torch.Tensor) -> torch.Tensor:  # [batch, head, query_pos, d_head]
        if mode == "zero":
            return context.masked_fill(cut, 0.0)
        if mode == "mean":
            means = reference.at(layer, context.shape[2]).to(context.dtype)  # [head, pos, d_head]
            return torch.where(cut, means[None].expand_as(context), context)
        keep = (torch.ones(context.shape[0], context.shape[2], dtype=torch.bool) if real is None
                else real.to(torch.bool))[:, None, :, None]  # [batch, 1, pos, 1]
        n = keep.sum(dim=2, keepdim=True).clamp(min=1)
        mean = (context * keep).sum(dim=2, keepdim=True) / n  # [batch, head, 1, d_head]
        return torch.where(cut, mean.expand_as(context), context)

    return edit


def check_mode(mode: str, modes: tuple[str, ...] = MODES) -> str:
    """``mode`` if it is one of ``modes``; raises ``ValueError`` naming them otherwise."""
    if mode not in modes:
        raise ValueError(f"ablation mode must be one of {tuple(modes)}, got {mode!r}")
    return mode


def ablation_edits(ablated: torch.Tensor, mode: str = "zero", real: torch.Tensor | None = None,
                   reference=None) -> dict:
    """``{stage name: edit}`` for :func:`~transformer_core.nn.hooks.intervene`.

    Args:
        ablated: bool ``[n_layers, batch or 1, n_heads]``, ``True`` = ablate that head (for that
            sentence: a batch may ablate a different head in each copy of a sentence).
        mode: one of :data:`MODE_DEFINITIONS`.
        real: bool ``[batch, pos]``, ``True`` = a real token (``"mean_sentence"``; ``None`` = every position).
        reference: what ``"mean"`` puts in (required there): an object with ``at(layer, n_pos)`` →
            ``[head, n_pos, d_head]``.

    Raises:
        ValueError: unknown mode, or ``"mean"`` without a reference.
    """
    check_mode(mode)
    edits = {f"layers.{layer}.attention.context": _replace(ablated[layer], mode, real, layer, reference)
             for layer in range(ablated.shape[0]) if bool(ablated[layer].any())}
    if mode == "mean" and reference is None and edits:
        raise ValueError("mean ablation needs the reference set's means (reference=)")
    return edits


@contextlib.contextmanager
def ablate(model: nn.Module, heads: Iterable[Head] | torch.Tensor, mode: str = "zero",
           real: torch.Tensor | None = None, reference=None) -> Iterator[None]:
    """Forward calls of ``model`` inside the block run with ``heads`` ablated (this thread only).

    ``heads``: ``[(layer, head), …]`` or a bool mask ``[n_layers, batch or 1, n_heads]`` (:func:`copies_mask`).
    ``model`` has ``layers.{i}.attention`` with ``n_heads`` (every model of :mod:`transformer_core.models`).
    ``real`` and ``reference``: see :func:`ablation_edits`.

    Raises:
        ValueError: unknown mode, or ``"mean"`` without ``reference``.
        KeyError: a layer the model does not have.
    """
    check_mode(mode)
    n_layers, n_heads = len(model.layers), model.layers[0].attention.n_heads
    mask = heads if isinstance(heads, torch.Tensor) else head_mask(heads, n_layers, n_heads)
    with intervene(model, ablation_edits(mask, mode, real, reference)):
        yield
