"""What ablating heads of MiniLM-L6 does to its sentence embeddings and its later layers.

:func:`ablation_effects` runs the batch intact and with the chosen heads ablated
(:mod:`transformer_core.analysis.ablation`) and measures the cosine between the two sentence
embeddings, how far each layer's output moved (relative L2 over real tokens), and which other sentence
of the batch becomes nearest. :func:`rank_heads` ablates each of the 72 heads alone and measures the
same cosine, one layer's 12 ablations per batched forward pass (each copy of the batch ablates a
different head).

The sentence embedding is all-MiniLM-L6-v2's as sentence-transformers makes it
(``SentenceTransformer.encode``): the text cut to ``max_seq_length`` = :data:`EMBEDDING_MAX_TOKENS` (256)
WordPiece tokens, ``[CLS]`` and ``[SEP]`` included, then mean pooling over real tokens and L2
normalisation. A longer sentence is run a second time, cut to 256 tokens, for its embedding; the layer
shifts and weights use the whole input (up to ``max_tokens``, at most 512).

Mean ablation (``mode="mean"``) replaces a head's context by its mean over the reference set
:data:`REFERENCE_SENTENCES` (:data:`REFERENCE_NAME`), per position, padding mask on; ``reference=`` takes
any other set of sentences.

Shape legend: batch, head, query_pos, key_pos; pos, d_model (384).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import torch

from ..models.minilm import EMBEDDING_MAX_TOKENS, MAX_POSITIONS, MINILM_CONFIG, load_minilm
from ..models.minilm_trace import run_minilm
from ..records.trace import Trace
from ..text.tokenize import sentence_list, wordpiece_encode
from .ablation import (Head, ReferenceMeans, ablate, cached_reference, nearest_other, record_reference,
                       relative_change, sentence_embeddings)

N_LAYERS, N_HEADS = MINILM_CONFIG.n_layers, MINILM_CONFIG.n_heads
RANK_BUDGET = 60_000_000  # attention numbers (copies × heads × pos²) per batched forward of rank_heads (~240 MB)
REFERENCE_NAME = "everyday-16"  # the default mean-ablation reference set's name (shown by the app)
REFERENCE_SENTENCES = (  # 16 everyday English sentences of 6–27 tokens ([CLS] and [SEP] included), varied topics
    "The train was late again this morning.",
    "She planted tomatoes, beans and a row of sunflowers behind the house.",
    "Can you send me the report before Friday?",
    "A small dog barked at the delivery van until it drove away.",
    "The museum opens at nine and closes at five on weekdays.",
    "He forgot his umbrella, so he waited under the bridge for the rain to stop.",
    "Prices of fresh fruit rose sharply after the early frost.",
    "We watched the match together and argued about the referee's decision for an hour afterwards.",
    "Thank you for your help.",
    "The children built a snowman with a carrot for a nose.",
    "Our neighbour repairs old bicycles in his garage on Saturdays.",
    "The library will be closed for repairs until the end of next month.",
    "Mix the flour and the butter, then add the milk slowly while stirring.",
    "Nobody expected the quiet student to win the national chess championship.",
    "It is cold outside.",
    "After the storm, volunteers cleared fallen branches from the roads and checked on elderly residents.",
)


def inputs_of(trace: Trace, padding: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask, real)`` ``[batch, pos]`` of a MiniLM trace, from its WordPiece tokens.

    ``real`` (bool) marks real tokens; ``attention_mask`` is ``real`` with the padding mask on,
    all ones with it off (as :func:`~transformer_core.models.minilm_trace.run_minilm` runs the model).
    """
    _, tokenizer = load_minilm()
    ids = torch.tensor([[tokenizer.token_to_id(t) for t in row] for row in trace.tokens], dtype=torch.long)
    real = torch.arange(ids.shape[1])[None, :] < torch.tensor(trace.lengths)[:, None]
    return ids, (real.long() if padding else torch.ones_like(ids)), real


def encode(sentences: list[str], max_tokens: int, padding: bool = True
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[int]]:
    """``(input_ids, attention_mask, real, lengths)`` of ``sentences`` cut to ``max_tokens`` WordPiece tokens with
    ``[SEP]`` kept last, as :func:`~transformer_core.models.minilm_trace.run_minilm` and sentence-transformers cut."""
    _, tokenizer = load_minilm()
    sep_id, pad_id = tokenizer.token_to_id("[SEP]"), tokenizer.token_to_id("[PAD]")
    rows = [list(e.ids) if len(e.ids) <= max_tokens else list(e.ids[:max_tokens - 1]) + [sep_id]
            for e in wordpiece_encode(sentence_list(sentences))]
    lengths = [len(r) for r in rows]
    width = max(lengths)
    ids = torch.tensor([r + [pad_id] * (width - len(r)) for r in rows], dtype=torch.long)
    real = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]
    return ids, (real.long() if padding else torch.ones_like(ids)), real, lengths


def minilm_reference(sentences=REFERENCE_SENTENCES, *, model=None) -> ReferenceMeans:
    """Each head's mean context over ``sentences`` (default :data:`REFERENCE_SENTENCES`), per position: the
    ``"mean"`` ablation's replacement (:class:`~transformer_core.analysis.ablation.ReferenceMeans`). One
    padded batch, padding mask on; computed once per model and set.

    Raises:
        ValueError: no sentence has a token. PretrainedUnavailable: MiniLM is missing.
    """
    sentences = tuple(sentence_list(sentences))
    if model is None:
        model, _ = load_minilm()
    name = REFERENCE_NAME if sentences == REFERENCE_SENTENCES else f"{len(sentences)} sentences"

    def make() -> ReferenceMeans:
        ids, attention_mask, real, _ = encode(list(sentences), MAX_POSITIONS)
        return record_reference(model, lambda m: m(ids, attention_mask), real, name)

    return cached_reference(model, ("minilm", sentences), make)


def _reference(mode: str, reference, model) -> ReferenceMeans | None:
    return minilm_reference(REFERENCE_SENTENCES if reference is None else reference, model=model) \
        if mode == "mean" else None


def _outputs(model, ids, attention_mask, layers_weights: Iterable[int]) -> tuple[list[torch.Tensor], dict]:
    """Every layer's output ``[batch, pos, d_model]`` and the weights of ``layers_weights``, of one forward."""
    from ..nn.hooks import capture

    wanted = {f"layers.{i}.attention.weights" for i in layers_weights}
    with torch.no_grad(), capture(model, only=lambda n: n.endswith("feed_forward.output") or n in wanted) as st:
        model(ids, attention_mask)
    return [st[f"layers.{i}.feed_forward.output"] for i in range(N_LAYERS)], \
        {i: st[f"layers.{i}.attention.weights"].numpy() for i in layers_weights}


def ablation_effects(sentences: list[str], heads: Iterable[Head], *, mode: str = "zero", padding: bool = True,
                     max_tokens: int = 128, weights_layer: int | None = None, reference=None) -> dict:
    """MiniLM-L6 on ``sentences``, intact and with ``heads`` ablated (``mode``: one of
    :data:`~transformer_core.analysis.ablation.MODE_DEFINITIONS`; ``reference``: the ``"mean"`` mode's reference
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


def rank_heads(sentences: list[str], *, mode: str = "zero", padding: bool = True,
               max_tokens: int = EMBEDDING_MAX_TOKENS, progress: Callable[[int, int], None] | None = None,
               reference=None) -> dict:
    """Ablate each of the 72 heads alone; the cosine of every sentence's ablated vs intact embedding.

    Only the embedding is measured, so the sentences are cut to ``min(max_tokens, 256)`` tokens, as
    sentence-transformers cuts them (:data:`EMBEDDING_MAX_TOKENS`). One batched forward per group of heads of
    a layer (the batch repeated once per head, each copy ablating its own head; at most :data:`RANK_BUDGET`
    attention numbers per pass). ``progress(done, total)`` is called after each pass. ``reference``: as
    :func:`ablation_effects`. Returns ``{"cosine": [layer, head, batch] float32, "trace": tokens-only Trace
    (of the cut input), "mode", "reference"}``; the effect of a head is ``1 − cosine``.

    Raises:
        ValueError: no token, a bad mode. PretrainedUnavailable: MiniLM is missing.
    """
    trace = run_minilm(list(sentences), padding=padding, max_tokens=min(max_tokens, EMBEDDING_MAX_TOKENS),
                       only=lambda name: False)
    model, _ = load_minilm()
    ref = _reference(mode, reference, model)
    ids, attention_mask, real = inputs_of(trace, padding)
    b, n = ids.shape
    intact, _ = _outputs(model, ids, attention_mask, ())
    base = sentence_embeddings(intact[-1], real)  # [batch, d_model]
    group = int(max(1, min(N_HEADS, RANK_BUDGET // max(1, b * N_HEADS * n * n))))
    passes = [(layer, list(range(h, min(N_HEADS, h + group)))) for layer in range(N_LAYERS)
              for h in range(0, N_HEADS, group)]
    cosine = np.zeros((N_LAYERS, N_HEADS, b), dtype=np.float32)
    for done, (layer, heads) in enumerate(passes, 1):
        k = len(heads)
        mask = torch.zeros(N_LAYERS, k * b, N_HEADS, dtype=torch.bool)
        for i, head in enumerate(heads):
            mask[layer, i * b:(i + 1) * b, head] = True  # copy i of the batch ablates this head
        tiled_real = real.repeat(k, 1)
        with torch.no_grad(), ablate(model, mask, mode, tiled_real, ref):
            hidden = model(ids.repeat(k, 1), attention_mask.repeat(k, 1))  # [k·batch, pos, d_model]
        emb = sentence_embeddings(hidden, tiled_real).view(k, b, -1)
        cosine[layer, heads] = (emb * base[None]).sum(-1).numpy()
        if progress is not None:
            progress(done, len(passes))
    return {"cosine": cosine, "mode": mode, "reference": None if ref is None else ref.name,
            "trace": Trace(tokens=trace.tokens, lengths=trace.lengths, truncated=trace.truncated, mask=trace.mask,
                           stages={}, settings=trace.settings)}
