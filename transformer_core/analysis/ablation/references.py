"""Reference means: each head's mean context over a named set of inputs, what the ``"mean"`` ablation puts in.

Mean ablation as the patching literature uses it (Wang et al.'s IOI circuit, Conmy et al.'s ACDC, TransformerLens's
patching tutorials): a head's context at position p is replaced by the mean of that head's context at position p over
the reference inputs that reach p (real tokens only); positions beyond the longest reference input get the head's
mean over every real position of every reference input ("pooled"). A reference set with no positions of its own
(:func:`pooled_means`) puts its pooled mean everywhere: the decoders' variant, whose reference prompts differ in length
and token positions.

Means come from user input (any set of sentences), so they are kept in a cache bounded in bytes whose entries expire
(:func:`cached_reference`). Shape legend: batch, head, pos, d_head.
"""
from __future__ import annotations

import contextvars
import dataclasses
import threading
import weakref
from collections.abc import Callable, Iterable

import cachetools
import torch
from torch import nn

from ...nn.hooks import capture


@dataclasses.dataclass(frozen=True)
class ReferenceMeans:
    """Each head's mean context over a reference set of inputs, per position (the ``"mean"`` mode).

    ``per_position[layer]``: ``[head, P, d_head]``, position p's mean over the reference inputs whose real
    tokens reach p (P = the longest reference input); ``pooled[layer]``: ``[head, d_head]``, the mean over
    every real position of every reference input, used beyond P; ``counts``: ``[P]`` how many reference
    inputs reach each position; ``name``: the set's name (shown by the app and written in settings).
    """

    name: str
    per_position: dict[int, torch.Tensor]
    pooled: dict[int, torch.Tensor]
    counts: torch.Tensor

    @property
    def nbytes(self) -> int:
        """Bytes of its tensors (what a cache of it holds)."""
        tensors = [*self.per_position.values(), *self.pooled.values(), self.counts]
        return sum(t.numel() * t.element_size() for t in tensors)

    def at(self, layer: int, n_pos: int) -> torch.Tensor:
        """``[head, n_pos, d_head]``: the replacement at positions 0 … n_pos − 1 of ``layer``."""
        known = self.per_position[layer][:, :n_pos]
        extra = n_pos - known.shape[1]
        if extra <= 0:
            return known
        return torch.cat([known, self.pooled[layer][:, None, :].expand(-1, extra, -1)], dim=1)


class _MeanSums:
    """Running sums of reference contexts, input batch by input batch, for :class:`ReferenceMeans` (float64)."""

    def __init__(self) -> None:
        self.per: dict[int, torch.Tensor] = {}  # layer → [head, P so far, d_head], summed over inputs
        self.pooled: dict[int, torch.Tensor] = {}  # layer → [head, d_head], summed over inputs and positions
        self.counts = torch.zeros(0, dtype=torch.float64)  # [P so far]: inputs reaching each position
        self.dtype = torch.float32

    def add(self, contexts: dict[int, torch.Tensor], real: torch.Tensor) -> None:
        keep = real.to(torch.bool)
        if not bool(keep.any()):
            return
        width = int((keep.sum(0) > 0).nonzero().max()) + 1
        w = keep[:, None, :width, None].to(torch.float64)  # [batch, 1, width, 1]
        grow = max(0, width - self.counts.shape[0])
        self.counts = torch.cat([self.counts, torch.zeros(grow, dtype=torch.float64)])
        self.counts[:width] += w.sum((0, 1, 3))
        for layer, ctx in contexts.items():
            self.dtype = ctx.dtype
            c = ctx[:, :, :width].to(torch.float64) * w  # [batch, head, width, d_head]
            per = c.sum(0)
            if layer not in self.per:
                self.per[layer] = torch.zeros(per.shape[0], 0, per.shape[2], dtype=torch.float64)
                self.pooled[layer] = torch.zeros(per.shape[0], per.shape[2], dtype=torch.float64)
            old = self.per[layer]
            if old.shape[1] < width:
                old = torch.cat([old, old.new_zeros(old.shape[0], width - old.shape[1], old.shape[2])], dim=1)
            old[:, :width] += per
            self.per[layer] = old
            self.pooled[layer] += c.sum((0, 2))

    def means(self, name: str) -> ReferenceMeans:
        if not bool((self.counts > 0).any()):
            raise ValueError("the reference set has no token")
        width = int((self.counts > 0).nonzero().max()) + 1  # P: the longest reference input
        counts, total = self.counts[:width], self.counts.sum()
        per = {layer: (v[:, :width] / counts[None, :, None]).to(self.dtype) for layer, v in self.per.items()}
        pooled = {layer: (v / total).to(self.dtype) for layer, v in self.pooled.items()}
        return ReferenceMeans(name=name, per_position=per, pooled=pooled, counts=counts.to(torch.long))


def reference_means(contexts: dict[int, torch.Tensor], real: torch.Tensor, name: str) -> ReferenceMeans:
    """:class:`ReferenceMeans` from each layer's context ``[batch, head, pos, d_head]`` of the reference inputs
    and ``real`` bool ``[batch, pos]`` (``True`` = a real token; real tokens are a prefix of each row).

    Raises:
        ValueError: no real token in the reference set.
    """
    sums = _MeanSums()
    sums.add(contexts, real)
    return sums.means(name)


def record_reference(model: nn.Module, forward: Callable[[nn.Module], object], real: torch.Tensor,
                     name: str) -> ReferenceMeans:
    """Run ``forward(model)`` on the reference inputs, intact, and average every layer's ``attention.context``
    (:func:`reference_means`). It runs in a fresh :class:`contextvars.Context`: the caller's captures and
    interventions (inside an ablation or a capture of this thread) neither change nor record it."""
    return record_reference_batches(model, [(forward, real)], name)


def record_reference_batches(model: nn.Module, batches: Iterable[tuple[Callable[[nn.Module], object], torch.Tensor]],
                             name: str) -> ReferenceMeans:
    """:func:`record_reference` over several input batches ``(forward, real)``, one forward at a time: the means
    are those of all their inputs together, while memory holds one batch's activations only (a large reference
    set split into batches of bounded size never needs the attention arrays of the whole set at once).

    Raises:
        ValueError: no real token in any batch.
    """
    sums = _MeanSums()
    for forward, real in batches:
        def run(forward=forward) -> dict:
            with torch.no_grad(), capture(model, only=lambda n: n.endswith(".attention.context")) as stages:
                forward(model)
            return dict(stages)

        stages = contextvars.Context().run(run)
        sums.add({i: stages[f"layers.{i}.attention.context"] for i in range(len(model.layers))}, real)
        del stages
    return sums.means(name)


# Reference means are derived from user input (any set of sentences), so they are kept in a cache bounded in
# bytes whose entries expire, never for the life of the process: a 512-token set's means are ~4.7 MB (MiniLM)
REFERENCE_CACHE_BYTES = 24 * 2**20
REFERENCE_TTL_S = 60.0
_REFERENCES = cachetools.TTLCache(maxsize=REFERENCE_CACHE_BYTES, ttl=REFERENCE_TTL_S,
                                  getsizeof=lambda entry: entry[1].nbytes + 1024)  # (model ref, means)
_REFERENCES_LOCK = threading.Lock()


def cached_reference(model: nn.Module, key, make: Callable[[], ReferenceMeans]) -> ReferenceMeans:
    """``make()`` once per ``(model, key)`` while its entry lives (:data:`REFERENCE_TTL_S` s after it was made,
    while the entries fit :data:`REFERENCE_CACHE_BYTES`, least recently used out first; means larger than the
    whole budget are returned, not kept). Models are shared and never changed."""
    with _REFERENCES_LOCK:
        _REFERENCES.expire()
        entry = _REFERENCES.get((id(model), key))
    if entry is not None and entry[0]() is model:  # an id is reused only after its model is gone
        return entry[1]
    found = make()
    with _REFERENCES_LOCK:
        try:
            _REFERENCES[(id(model), key)] = (weakref.ref(model), found)
        except ValueError:  # larger than the whole budget
            pass
    return found


def has_reference(model: nn.Module, key) -> bool:
    """Whether :func:`cached_reference` holds ``(model, key)``'s means now (it would not run ``make``)."""
    with _REFERENCES_LOCK:
        _REFERENCES.expire()
        entry = _REFERENCES.get((id(model), key))
    return entry is not None and entry[0]() is model


def expire_references() -> dict:
    """Drop the expired reference means now (an idle server's sweeper calls it); returns ``{"entries", "bytes",
    "budget"}`` after."""
    with _REFERENCES_LOCK:
        _REFERENCES.expire()
        return {"entries": len(_REFERENCES), "bytes": int(_REFERENCES.currsize), "budget": int(_REFERENCES.maxsize)}


def clear_references() -> None:
    """Empty the reference cache (tests)."""
    with _REFERENCES_LOCK:
        _REFERENCES.clear()



def pooled_means(name: str, pooled: dict[int, torch.Tensor]) -> ReferenceMeans:
    """:class:`ReferenceMeans` that put ``pooled[layer]`` ``[head, d_head]`` at every position (no per-position
    means: a reference set of prompts whose positions do not line up, e.g. the decoders' IOI prompts)."""
    per = {layer: v.new_zeros(v.shape[0], 0, v.shape[1]) for layer, v in pooled.items()}
    return ReferenceMeans(name=name, per_position=per, pooled=dict(pooled), counts=torch.zeros(0, dtype=torch.long))
