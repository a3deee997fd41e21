"""MiniLM-L6's reference sets for the ``"mean"`` ablation: the default set, and any set a user pastes, within a
budget counted before any work.

The default set is :data:`REFERENCE_SENTENCES` (:data:`REFERENCE_NAME`), run with the padding mask on; ``reference=``
of :mod:`~transformer_core.analysis.ablation.embedding` takes any other set of sentences within
:func:`fit_reference`'s budget (:data:`REFERENCE_MAX_BYTES` bytes of text, :data:`REFERENCE_MAX_LINES` sentences,
:data:`REFERENCE_MAX_TOKENS` tokens), run in batches of at most :data:`REFERENCE_CHUNK_CELLS` padded token pairs, so
its memory does not grow with the set. Inputs are cut as sentence-transformers cuts them (:func:`encode`).

Shape legend: batch, pos.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import torch

from ...models.minilm import MAX_POSITIONS, MINILM_CONFIG, load_minilm
from ...text.tokenize import sentence_list, wordpiece_encode
from .references import ReferenceMeans, cached_reference, has_reference, record_reference_batches

N_LAYERS, N_HEADS = MINILM_CONFIG.n_layers, MINILM_CONFIG.n_heads
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
    ``"mean"`` ablation's replacement (:class:`~transformer_core.analysis.ablation.references.ReferenceMeans`).
    Padding mask on; run in batches of bounded size (:func:`reference_batches`), so a set's memory does not grow
    with it; kept a while in a byte-bounded cache (:func:`~transformer_core.analysis.ablation.references.cached_reference`).

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
    sentences = tuple(line.strip() for line in sentence_list(sentences) if line.strip())
    if model is None:
        model, _ = load_minilm()
    return has_reference(model, ("minilm", sentences))


