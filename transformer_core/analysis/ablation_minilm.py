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
any other set of sentences within a budget counted before any work (:func:`fit_reference`:
:data:`REFERENCE_MAX_BYTES` bytes of text, :data:`REFERENCE_MAX_LINES` sentences, :data:`REFERENCE_MAX_TOKENS`
tokens), run in batches of at most :data:`REFERENCE_CHUNK_CELLS` padded token pairs, so its memory does not grow
with the set.

Shape legend: batch, head, query_pos, key_pos; pos, d_model (384).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import numpy as np
import torch

from ..models.minilm import EMBEDDING_MAX_TOKENS, MAX_POSITIONS, MINILM_CONFIG, load_minilm
from ..models.minilm_trace import run_minilm
from ..records.trace import Trace
from ..text.tokenize import sentence_list, wordpiece_encode
from .ablation import (Head, ReferenceMeans, ablate, cached_reference, nearest_other, record_reference_batches,
                       relative_change, sentence_embeddings)

N_LAYERS, N_HEADS = MINILM_CONFIG.n_layers, MINILM_CONFIG.n_heads
RANK_BUDGET = 60_000_000  # attention numbers (copies × heads × pos²) per batched forward of rank_heads (~240 MB)
# A reference set is user input: its budget, counted before the model runs. 64 sentences of 32 tokens or 4 of 512
# fit (~2 s of one core here); a 512-token sentence costs ~42 MB of attention arrays per forward, so the set runs
# in batches of at most REFERENCE_CHUNK_CELLS (rows × padded length²: two 512-token rows, ~25 MB of weights a layer)
REFERENCE_MAX_BYTES = 32_768  # UTF-8 bytes of the whole set, cut before it is tokenized
REFERENCE_MAX_LINES = 64
REFERENCE_MAX_TOKENS = 2_048  # WordPiece tokens of the whole set, [CLS] and [SEP] included, each line ≤ 512
REFERENCE_CHUNK_CELLS = 2 * 512 * 512
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


@dataclasses.dataclass(frozen=True)
class ReferenceFit:
    """A reference set within the budget: ``sentences`` (what is used), ``given`` (how many non-blank lines
    came), ``tokens`` (their WordPiece tokens, each line cut to 512), ``cut_by`` (``None``, or the budget that cut
    it: ``"bytes"``, ``"lines"`` or ``"tokens"``)."""

    sentences: tuple[str, ...]
    given: int
    tokens: int
    cut_by: str | None


def _lengths(sentences: list[str]) -> list[int]:
    """WordPiece tokens of each sentence with [CLS] and [SEP], cut to the model's 512 as :func:`encode` cuts."""
    return [min(len(e.ids), MAX_POSITIONS) for e in wordpiece_encode(sentences)] if sentences else []


def fit_reference(lines: Iterable[str]) -> ReferenceFit:
    """The leading part of ``lines`` (one sentence each; blank lines dropped) that fits the reference budget:
    at most :data:`REFERENCE_MAX_BYTES` bytes of UTF-8 text (counted first, before tokenizing; a cut line keeps its
    whole characters), :data:`REFERENCE_MAX_LINES` sentences and :data:`REFERENCE_MAX_TOKENS` tokens.

    Raises:
        TypeError: ``lines`` is one string (see :func:`~transformer_core.text.tokenize.sentence_list`).
    """
    raw = sentence_list(lines)
    given = [line.strip() for line in raw if line.strip()]
    cut_by, kept, used = None, [], 0
    for line in given:
        size = len(line.encode("utf-8")) + 1
        if used + size > REFERENCE_MAX_BYTES:
            cut_by = "bytes"
            room = REFERENCE_MAX_BYTES - used - 1
            part = line.encode("utf-8")[:max(0, room)].decode("utf-8", "ignore").strip()
            if part:
                kept.append(part)
            break
        kept.append(line)
        used += size
    if len(kept) > REFERENCE_MAX_LINES:
        kept, cut_by = kept[:REFERENCE_MAX_LINES], "lines"
    total, fitted = 0, []
    for line, n in zip(kept, _lengths(kept)):
        if total + n > REFERENCE_MAX_TOKENS:
            cut_by = "tokens"
            break
        fitted.append(line)
        total += n
    return ReferenceFit(tuple(fitted), len(given), total, cut_by)


def reference_batches(lengths: list[int]) -> list[list[int]]:
    """Indices of the reference sentences per batch: by length (least padding), each batch at most
    :data:`REFERENCE_CHUNK_CELLS` rows × longest² (a 512-token sentence alone in a batch still runs)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    for i in order:
        if batches and (len(batches[-1]) + 1) * lengths[i] ** 2 <= REFERENCE_CHUNK_CELLS:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def reference_attention_bytes(sentences) -> int:
    """Bytes of the attention arrays of every layer of the largest batch :func:`minilm_reference` runs for
    ``sentences`` (as :func:`~ui.shell.heavy.attention_bytes` counts a page's run): what sizes its memory."""
    lengths = _lengths(sentence_list(sentences))
    return max((len(b) * max(lengths[i] for i in b) ** 2 * N_LAYERS * N_HEADS * 4
                for b in reference_batches(lengths)), default=0)


def minilm_reference(sentences=REFERENCE_SENTENCES, *, model=None) -> ReferenceMeans:
    """Each head's mean context over ``sentences`` (default :data:`REFERENCE_SENTENCES`), per position: the
    ``"mean"`` ablation's replacement (:class:`~transformer_core.analysis.ablation.ReferenceMeans`). Padding mask
    on; run in batches of bounded size (:func:`reference_batches`), so a set's memory does not grow with it; kept a
    while in a byte-bounded cache (:func:`~transformer_core.analysis.ablation.cached_reference`).

    Raises:
        ValueError: no sentence has a token, or the set is over the budget (cut it first with
            :func:`fit_reference`). PretrainedUnavailable: MiniLM is missing.
    """
    sentences = tuple(line.strip() for line in sentence_list(sentences) if line.strip())
    fit = fit_reference(sentences)
    if fit.cut_by is not None:
        raise ValueError(f"the reference set is over its budget ({fit.cut_by}): at most {REFERENCE_MAX_LINES} "
                         f"sentences, {REFERENCE_MAX_TOKENS} tokens and {REFERENCE_MAX_BYTES} bytes; "
                         f"fit_reference() keeps the first {len(fit.sentences)}")
    if model is None:
        model, _ = load_minilm()
    name = REFERENCE_NAME if sentences == REFERENCE_SENTENCES else f"{len(sentences)} sentences"

    def make() -> ReferenceMeans:
        def batches():
            for batch in reference_batches(_lengths(list(sentences))):
                ids, attention_mask, real, _ = encode([sentences[i] for i in batch], MAX_POSITIONS)
                yield (lambda m, ids=ids, mask=attention_mask: m(ids, mask)), real

        return record_reference_batches(model, batches(), name)

    return cached_reference(model, ("minilm", sentences), make)


def reference_is_cached(sentences, *, model=None) -> bool:
    """Whether :func:`minilm_reference` of ``sentences`` would come from its cache now (no MiniLM run)."""
    from .ablation import has_reference

    sentences = tuple(line.strip() for line in sentence_list(sentences) if line.strip())
    if model is None:
        model, _ = load_minilm()
    return has_reference(model, ("minilm", sentences))


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
