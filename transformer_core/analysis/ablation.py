"""Head ablation: knock attention heads out and measure what changes.

A head's *context* ``[batch, head, query_pos, d_head]`` (its weights times its values, before the
heads are concatenated and projected by W_O) is replaced:

* ``"zero"`` — by 0, what Hugging Face ``BertModel``'s ``head_mask`` did (Michel et al., "Are Sixteen
  Heads Really Better than One?", 2019). transformers 5 dropped ``head_mask`` and ignores it silently;
  the tests zero the head's slice of ``BertSelfAttention``'s output with a forward hook instead;
* ``"mean"`` (mean ablation as the patching literature uses it: Wang et al.'s IOI circuit, Conmy et al.'s
  ACDC, TransformerLens's patching tutorials) — by its mean over a named **reference set** of inputs,
  **per position**: the context at position p is replaced by the mean of that head's context at
  position p over the reference inputs that reach p (real tokens only); positions beyond the longest
  reference input get the head's mean over every real position of every reference input (named
  "pooled" in :class:`ReferenceMeans`). The default sets are module-level:
  :data:`transformer_core.analysis.ablation_minilm.REFERENCE_SENTENCES` (MiniLM) and
  :data:`transformer_core.analysis.ablation_causal.REFERENCE` (the causal model); any other set is
  one :func:`reference_means` call away;
* ``"mean_sentence"`` — this project's earlier variant: by its mean over the *same* sentence's real
  (non-``[PAD]``) tokens, so what the head does per token is removed but what it does for this
  sentence as a whole stays (the mean is taken from the input being ablated, not from a reference set).

The replacement goes through :func:`~transformer_core.nn.hooks.intervene`: a context variable,
private to the calling thread, so a model shared between sessions is never changed, and nothing
happens outside the block. Everything W_O adds besides the heads (its bias) stays.

Heads are named ``L3H7`` (layer 3, head 7); :func:`parse_heads` reads a list such as ``L3H7,L4H2``.
Shape legend: batch, head, query_pos, key_pos, d_head; pos, d_model.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator

import cachetools
import torch
from torch import nn

from ..nn.hooks import capture, intervene
from ..text.i18n import _

Head = tuple[int, int]  # (layer, head)
MODE_DEFINITIONS = {  # mode → one line on what replaces the head's context (English)
    "zero": "0 (what Hugging Face's head_mask did)",
    "mean": "its mean over a reference set of inputs, per position (IOI, ACDC, TransformerLens patching)",
    "mean_sentence": "its mean over the same sentence's real tokens (this project's earlier mean ablation)",
}
MODES = tuple(MODE_DEFINITIONS)  # ("zero", "mean", "mean_sentence")
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


def head_mask(heads: Iterable[Head], n_layers: int, n_heads: int) -> torch.Tensor:
    """bool ``[n_layers, 1, n_heads]``: ``True`` = this head is ablated (for every sentence of the batch)."""
    mask = torch.zeros(n_layers, 1, n_heads, dtype=torch.bool)
    for layer, head in heads:
        mask[layer, 0, head] = True
    return mask


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


def _replace(ablated: torch.Tensor, mode: str, real: torch.Tensor | None, layer: int,
             reference: ReferenceMeans | None) -> Callable[[torch.Tensor], torch.Tensor]:
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


def ablation_edits(ablated: torch.Tensor, mode: str = "zero", real: torch.Tensor | None = None,
                   reference: ReferenceMeans | None = None) -> dict:
    """``{stage name: edit}`` for :func:`~transformer_core.nn.hooks.intervene`.

    Args:
        ablated: bool ``[n_layers, batch or 1, n_heads]``, ``True`` = ablate that head (for that
            sentence: a batch may ablate a different head in each copy of a sentence).
        mode: one of :data:`MODE_DEFINITIONS` (see the module docstring).
        real: bool ``[batch, pos]``, ``True`` = a real token (``"mean_sentence"``; ``None`` = every position).
        reference: the reference set's means (``"mean"``; required there).

    Raises:
        ValueError: unknown mode, or ``"mean"`` without a reference.
    """
    if mode not in MODE_DEFINITIONS:
        raise ValueError(f"ablation mode must be one of {tuple(MODE_DEFINITIONS)}, got {mode!r}")
    edits = {f"layers.{layer}.attention.context": _replace(ablated[layer], mode, real, layer, reference)
             for layer in range(ablated.shape[0]) if bool(ablated[layer].any())}
    if mode == "mean" and reference is None and edits:
        raise ValueError("mean ablation needs the reference set's means (reference=)")
    return edits


@contextlib.contextmanager
def ablate(model: nn.Module, heads: Iterable[Head] | torch.Tensor, mode: str = "zero",
           real: torch.Tensor | None = None, reference: ReferenceMeans | None = None) -> Iterator[None]:
    """Forward calls of ``model`` inside the block run with ``heads`` ablated (this thread only).

    ``heads``: ``[(layer, head), …]`` or a bool mask ``[n_layers, batch or 1, n_heads]``.
    ``model`` has ``layers.{i}.attention`` (:class:`~transformer_core.models.minilm.MiniLM`,
    :class:`~transformer_core.models.causal.CausalLM`, the toy encoder). ``real``: see :func:`ablation_edits`.
    ``reference`` (``"mean"`` mode, required there): the reference set's means, e.g.
    :func:`~transformer_core.analysis.ablation_minilm.minilm_reference` or
    :func:`~transformer_core.analysis.ablation_causal.causal_reference` (this module imports neither: they import it).

    Raises:
        ValueError: unknown mode, or ``"mean"`` without ``reference``.
        KeyError: a layer the model does not have.
    """
    if mode not in MODE_DEFINITIONS:
        raise ValueError(f"ablation mode must be one of {tuple(MODE_DEFINITIONS)}, got {mode!r}")
    n_layers, n_heads = len(model.layers), model.layers[0].attention.n_heads
    mask = heads if isinstance(heads, torch.Tensor) else head_mask(heads, n_layers, n_heads)
    with intervene(model, ablation_edits(mask, mode, real, reference)):
        yield


def sentence_embeddings(hidden: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """Mean over real tokens, then L2 normalisation — how all-MiniLM-L6-v2 makes a sentence embedding
    (sentence-transformers ``Pooling(mode="mean")`` + ``Normalize``).

    ``hidden [batch, pos, d_model]``, ``real`` bool ``[batch, pos]`` → ``[batch, d_model]``.
    """
    keep = real.to(hidden.dtype)[..., None]  # [batch, pos, 1]
    pooled = (hidden * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1e-9)
    return nn.functional.normalize(pooled, p=2, dim=-1)


def relative_change(ablated: torch.Tensor, intact: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """``‖ablated − intact‖ / ‖intact‖`` over each sentence's real tokens: ``[batch, pos, d]`` → ``[batch]``."""
    keep = real.to(intact.dtype)[..., None]
    num = ((ablated - intact) * keep).flatten(1).norm(dim=1)
    return num / (intact * keep).flatten(1).norm(dim=1).clamp(min=1e-12)


def nearest_other(embeddings: torch.Tensor) -> list[int | None]:
    """For each sentence, the index of the most similar *other* sentence (cosine; ``None`` if alone)."""
    if embeddings.shape[0] < 2:
        return [None] * embeddings.shape[0]
    sim = embeddings @ embeddings.T
    sim.fill_diagonal_(-float("inf"))
    return sim.argmax(dim=1).tolist()
