"""What ablating heads of MiniLM-L6 does to its sentence embeddings and its later layers.

:func:`ablation_effects` runs the batch intact and with the chosen heads ablated and measures the cosine between the
two sentence embeddings, how far each layer's output moved (relative L2 over real tokens), and which other sentence
of the batch becomes nearest. :func:`rank_heads` ablates each of the 72 heads alone and measures the same cosine
(:class:`EmbeddingCosine`, through :func:`~transformer_core.analysis.ablation.ranking.rank_heads`: each copy of the
batch ablates a different head, at most :data:`RANK_BUDGET` attention numbers per pass).

The sentence embedding is all-MiniLM-L6-v2's as sentence-transformers makes it (``SentenceTransformer.encode``): the
text cut to ``max_seq_length`` = :data:`~transformer_core.models.minilm.EMBEDDING_MAX_TOKENS` (256) WordPiece tokens,
``[CLS]`` and ``[SEP]`` included, then mean pooling over real tokens and L2 normalisation. A longer sentence is run a
second time, cut to 256 tokens, for its embedding; the layer shifts and weights use the whole input (up to
``max_tokens``, at most 512). The ``"mean"`` mode's reference sets: :mod:`.embedding_reference`.

Shape legend: batch, head, query_pos, key_pos; pos, d_model (384).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import torch
from torch import nn

from ...models.face import MiniLMFace
from ...models.minilm import EMBEDDING_MAX_TOKENS, load_minilm
from ...models.minilm_trace import run_minilm
from ...nn.head_ablation import Head, ablate
from ...nn.hooks import capture
from ...records.trace import Trace
from . import ranking
from .embedding_reference import N_LAYERS, REFERENCE_SENTENCES, encode, minilm_reference
from .references import ReferenceMeans

RANK_BUDGET = 60_000_000  # attention numbers (copies × heads × pos²) per batched forward of rank_heads (~240 MB)


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


def inputs_of(trace: Trace, padding: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask, real)`` ``[batch, pos]`` of a MiniLM trace, from its WordPiece tokens.

    ``real`` (bool) marks real tokens; ``attention_mask`` is ``real`` with the padding mask on,
    all ones with it off (as :func:`~transformer_core.models.minilm_trace.run_minilm` runs the model).
    """
    _, tokenizer = load_minilm()
    ids = torch.tensor([[tokenizer.token_to_id(t) for t in row] for row in trace.tokens], dtype=torch.long)
    real = torch.arange(ids.shape[1])[None, :] < torch.tensor(trace.lengths)[:, None]
    return ids, (real.long() if padding else torch.ones_like(ids)), real


def _reference(mode: str, reference, model) -> ReferenceMeans | None:
    return minilm_reference(REFERENCE_SENTENCES if reference is None else reference, model=model) \
        if mode == "mean" else None


def _outputs(model, ids, attention_mask, layers_weights: Iterable[int]) -> tuple[list[torch.Tensor], dict]:
    """Every layer's output ``[batch, pos, d_model]`` and the weights of ``layers_weights``, of one forward."""
    wanted = {f"layers.{i}.attention.weights" for i in layers_weights}
    with torch.no_grad(), capture(model, only=lambda n: n.endswith("feed_forward.output") or n in wanted) as st:
        model(ids, attention_mask)
    return [st[f"layers.{i}.feed_forward.output"] for i in range(N_LAYERS)], \
        {i: st[f"layers.{i}.attention.weights"].numpy() for i in layers_weights}


def ablation_effects(sentences: list[str], heads: Iterable[Head], *, mode: str = "zero", padding: bool = True,
                     max_tokens: int = 128, weights_layer: int | None = None, reference=None) -> dict:
    """MiniLM-L6 on ``sentences``, intact and with ``heads`` ablated (``mode``: one of
    :data:`~transformer_core.nn.head_ablation.MODE_DEFINITIONS`; ``reference``: the ``"mean"`` mode's reference
    sentences, default :data:`REFERENCE_SENTENCES`).

    Returns plain NumPy/lists:
    ``trace`` (tokens and mask only), ``cosine`` ``[batch]`` (ablated vs intact sentence embedding),
    ``shift`` ``[layer, batch]`` (‖ablated − intact‖ / ‖intact‖ of each layer's output, real tokens),
    ``embedding`` and ``similarity`` (``{"intact", "ablated"}``: ``[batch, 384]``, ``[batch, batch]``),
    ``nearest`` (``{"intact", "ablated"}``: per sentence the index of the nearest other one, or None),
    ``weights`` (``{"intact", "ablated"}``: ``[batch, head, query_pos, key_pos]`` of ``weights_layer``, if given),
    ``embedding_tokens`` (per sentence, the tokens its embedding saw: at most :data:`EMBEDDING_MAX_TOKENS`),
    ``reference`` (the reference set's name in mean mode, else None).

    Raises:
        ValueError: no token, a bad mode or max_tokens. PretrainedUnavailable: MiniLM is missing.
    """
    heads = tuple(heads)
    layers_w = () if weights_layer is None else (weights_layer,)
    trace = run_minilm(list(sentences), padding=padding, max_tokens=max_tokens, only=lambda name: False)
    model, _ = load_minilm()
    ref = _reference(mode, reference, model)
    ids, attention_mask, real = inputs_of(trace, padding)
    intact, w_intact = _outputs(model, ids, attention_mask, layers_w)
    with ablate(model, heads, mode, real, ref):
        ablated, w_ablated = _outputs(model, ids, attention_mask, layers_w)
    cut = min(int(trace.settings["max_tokens"]), EMBEDDING_MAX_TOKENS)
    if max(trace.lengths) <= cut:  # every sentence fits: the embedding is the last layer's, pooled
        emb = {"intact": sentence_embeddings(intact[-1], real), "ablated": sentence_embeddings(ablated[-1], real)}
        seen = list(trace.lengths)
    else:  # as sentence-transformers: the embedding of the text cut to 256 tokens
        e_ids, e_mask, e_real, seen = encode(list(sentences), cut, padding)
        with torch.no_grad():
            e_intact = model(e_ids, e_mask)
            with ablate(model, heads, mode, e_real, ref):
                e_ablated = model(e_ids, e_mask)
        emb = {"intact": sentence_embeddings(e_intact, e_real), "ablated": sentence_embeddings(e_ablated, e_real)}
    settings = {**trace.settings, "ablate": heads, "mode": mode}
    if ref is not None:
        settings["reference"] = ref.name
    return {
        "trace": Trace(tokens=trace.tokens, lengths=trace.lengths, truncated=trace.truncated, mask=trace.mask,
                       stages={}, settings=settings),
        "cosine": (emb["intact"] * emb["ablated"]).sum(-1).numpy(),
        "shift": np.stack([relative_change(a, i, real).numpy() for a, i in zip(ablated, intact)]),
        "embedding": {k: v.numpy() for k, v in emb.items()},
        "similarity": {k: (v @ v.T).numpy() for k, v in emb.items()},
        "nearest": {k: nearest_other(v) for k, v in emb.items()},
        "weights": {"intact": w_intact.get(weights_layer), "ablated": w_ablated.get(weights_layer)},
        "embedding_tokens": list(seen),
        "reference": None if ref is None else ref.name,
    }


class EmbeddingCosine:
    """The measure of MiniLM's ranking (:class:`~transformer_core.analysis.ablation.ranking.Measure`): the cosine
    between each sentence's embedding with a head ablated and its intact embedding, ``[copies, batch]`` float32.

    ``ids``, ``attention_mask``, ``real``: ``[batch, pos]`` (:func:`inputs_of`); the input must fit the embedding's
    256 tokens (the last layer's output is pooled whole).
    """

    def __init__(self, ids: torch.Tensor, attention_mask: torch.Tensor, real: torch.Tensor) -> None:
        self.ids, self.attention_mask, self.real = ids, attention_mask, real
        self.rows = ids.shape[0]

    def intact(self, face) -> torch.Tensor:
        """The intact sentence embeddings ``[batch, d_model]``."""
        outputs, _ = _outputs(face.module, self.ids, self.attention_mask, ())
        return sentence_embeddings(outputs[-1], self.real)

    def run(self, face, copies: int = 1, *, layer: int | None = None, intact=None) -> torch.Tensor:
        """The last layer's output ``[copies·batch, pos, d_model]`` of ``copies`` copies of the batch."""
        return face.module(self.ids.repeat(copies, 1), self.attention_mask.repeat(copies, 1))

    def compare(self, intact: torch.Tensor, ablated: torch.Tensor, copies: int) -> np.ndarray:
        emb = sentence_embeddings(ablated, self.real.repeat(copies, 1)).view(copies, self.rows, -1)
        return (emb * intact[None]).sum(-1).numpy()

    def group(self, n_heads: int) -> int:
        n = self.ids.shape[1]
        return RANK_BUDGET // max(1, self.rows * n_heads * n * n)


def rank_heads(sentences: list[str], *, mode: str = "zero", padding: bool = True,
               max_tokens: int = EMBEDDING_MAX_TOKENS, progress: Callable[[int, int], None] | None = None,
               reference=None) -> dict:
    """Ablate each of the 72 heads alone; the cosine of every sentence's ablated vs intact embedding.

    Only the embedding is measured, so the sentences are cut to ``min(max_tokens, 256)`` tokens, as
    sentence-transformers cuts them (:data:`~transformer_core.models.minilm.EMBEDDING_MAX_TOKENS`). One batched
    forward per group of heads of a layer (:class:`EmbeddingCosine`, :func:`~.ranking.rank_heads`).
    ``progress(done, total)`` is called after each pass. ``reference``: as :func:`ablation_effects`. Returns
    ``{"cosine": [layer, head, batch] float32, "trace": tokens-only Trace (of the cut input), "mode", "reference"}``;
    the effect of a head is ``1 − cosine``.

    Raises:
        ValueError: no token, a bad mode. PretrainedUnavailable: MiniLM is missing.
    """
    trace = run_minilm(list(sentences), padding=padding, max_tokens=min(max_tokens, EMBEDDING_MAX_TOKENS),
                       only=lambda name: False)
    model, _ = load_minilm()
    ref = _reference(mode, reference, model)
    measure = EmbeddingCosine(*inputs_of(trace, padding))
    ranked = ranking.rank_heads(MiniLMFace(), measure, mode=mode, reference=ref, progress=progress)
    return {"cosine": ranked["values"], "mode": mode, "reference": None if ref is None else ref.name,
            "trace": Trace(tokens=trace.tokens, lengths=trace.lengths, truncated=trace.truncated, mask=trace.mask,
                           stages={}, settings=trace.settings)}
