"""Head ablation: knock attention heads out and measure what changes.

A head's *context* ``[batch, head, query_pos, d_head]`` (its weights times its values, before the
heads are concatenated and projected by W_O) is replaced:

* ``"zero"`` — by 0, what Hugging Face ``BertModel``'s ``head_mask`` did (Michel et al., "Are Sixteen
  Heads Really Better than One?", 2019). transformers 5 dropped ``head_mask`` and ignores it silently;
  the tests zero the head's slice of ``BertSelfAttention``'s output with a forward hook instead;
* ``"mean"`` — by its mean over the sentence's real (non-``[PAD]``) tokens, so only what the head
  does *per token* is removed (mean-ablation, as in TransformerLens's patching).

The replacement goes through :func:`~transformer_core.nn.hooks.intervene`: a context variable,
private to the calling thread, so a model shared between sessions is never changed, and nothing
happens outside the block. Everything W_O adds besides the heads (its bias) stays.

Heads are named ``L3H7`` (layer 3, head 7); :func:`parse_heads` reads a list such as ``L3H7,L4H2``.
Shape legend: batch, head, query_pos, key_pos, d_head; pos, d_model.
"""
from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator

import torch
from torch import nn

from ..nn.hooks import intervene
from ..text.i18n import _

Head = tuple[int, int]  # (layer, head)
MODES = ("zero", "mean")
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


def _replace(ablated: torch.Tensor, mode: str, real: torch.Tensor | None) -> Callable[[torch.Tensor], torch.Tensor]:
    """The edit of one layer's context: ``ablated`` bool ``[batch or 1, head]``, ``real`` bool ``[batch, pos]``."""
    cut = ablated[:, :, None, None]  # [batch|1, head, 1, 1]

    def edit(context: torch.Tensor) -> torch.Tensor:  # [batch, head, query_pos, d_head]
        if mode == "zero":
            return context.masked_fill(cut, 0.0)
        keep = (torch.ones(context.shape[0], context.shape[2], dtype=torch.bool) if real is None
                else real.to(torch.bool))[:, None, :, None]  # [batch, 1, pos, 1]
        n = keep.sum(dim=2, keepdim=True).clamp(min=1)
        mean = (context * keep).sum(dim=2, keepdim=True) / n  # [batch, head, 1, d_head]
        return torch.where(cut, mean.expand_as(context), context)

    return edit


def ablation_edits(ablated: torch.Tensor, mode: str = "zero", real: torch.Tensor | None = None) -> dict:
    """``{stage name: edit}`` for :func:`~transformer_core.nn.hooks.intervene`.

    Args:
        ablated: bool ``[n_layers, batch or 1, n_heads]``, ``True`` = ablate that head (for that
            sentence: a batch may ablate a different head in each copy of a sentence).
        mode: ``"zero"`` or ``"mean"`` (see the module docstring).
        real: bool ``[batch, pos]``, ``True`` = a real token (mean mode; ``None`` = every position).

    Raises:
        ValueError: unknown mode.
    """
    if mode not in MODES:
        raise ValueError(f"ablation mode must be one of {MODES}, got {mode!r}")
    return {f"layers.{layer}.attention.context": _replace(ablated[layer], mode, real)
            for layer in range(ablated.shape[0]) if bool(ablated[layer].any())}


@contextlib.contextmanager
def ablate(model: nn.Module, heads: Iterable[Head] | torch.Tensor, mode: str = "zero",
           real: torch.Tensor | None = None) -> Iterator[None]:
    """Forward calls of ``model`` inside the block run with ``heads`` ablated (this thread only).

    ``heads``: ``[(layer, head), …]`` or a bool mask ``[n_layers, batch or 1, n_heads]``.
    ``model`` has ``layers.{i}.attention`` (:class:`~transformer_core.models.minilm.MiniLM`,
    :class:`~transformer_core.models.causal.CausalLM`, the toy encoder). ``real``: see :func:`ablation_edits`.

    Raises:
        ValueError: unknown mode. KeyError: a layer the model does not have.
    """
    n_layers, n_heads = len(model.layers), model.layers[0].attention.n_heads
    mask = heads if isinstance(heads, torch.Tensor) else head_mask(heads, n_layers, n_heads)
    with intervene(model, ablation_edits(mask, mode, real)):
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
