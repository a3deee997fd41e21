"""A :class:`~transformer_core.records.trace.Trace` of the trained MiniLM-L6: :func:`run_minilm`.

Shape legend: batch, head, query_pos, key_pos, d_model (384).
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from ..nn.hooks import capture
from .minilm import MAX_POSITIONS, MINILM_CONFIG, load_minilm, whole_number
from ..text.tokenize import PAD, TokenBatch, sentence_list, wordpiece_encode
from ..records.trace import Trace
from .toy import build_mask, flag


def run_minilm(sentences: list[str], *, padding: bool = True, max_tokens: int = 128,
               only: Callable[[str], bool] | None = None, n_layers: int | None = None) -> Trace:
    """Run MiniLM-L6 on ``sentences`` and capture every stage of all 6 layers.

    Each sentence goes through :func:`~transformer_core.text.tokenize.normalize_text` (NFC, control
    characters shown as control pictures) and becomes WordPiece tokens ``[CLS] … [SEP]``;
    typed text that spells a special token (``"[PAD]"``, ``"[CLS]"`` …) is ordinary text
    (``[``, ``pad``, ``]``), so the only special ids are the model's own. One longer than
    ``max_tokens`` is cut to ``max_tokens`` tokens with ``[SEP]`` kept last
    (``truncated[b]`` is True). The batch is padded with ``[PAD]`` (id 0) up to its longest
    sentence only. An empty sentence in a batch with others is ``[CLS] [SEP]``.

    With ``padding=True`` the padding mask hides the ``[PAD]`` key columns (``trace.mask``
    is bool ``[batch, 1, query_pos, key_pos]``); with ``padding=False`` there is no mask
    (``trace.mask`` is ``None``) and the model attends to ``[PAD]`` tokens too.

    Stages: ``embeddings`` ``[batch, pos, 384]`` and ``layers.{i}.attention.*``,
    ``layers.{i}.feed_forward.{hidden,output}`` for i in 0…5, float32 NumPy arrays; ``only`` (a
    predicate on those names, see :func:`~transformer_core.nn.hooks.capture`) keeps just some of them.
    ``n_layers`` (1…6, default all) runs only the first layers: later layers' stages are not computed
    (a view of layer ``i`` needs ``n_layers = i + 1``; layer 0 alone costs a sixth of the run).

    Raises:
        ValueError: no sentence has a token, ``max_tokens`` is not in 2…512, or ``n_layers`` not in 1…6.
        TypeError: ``sentences`` is one string (not a list) or ``padding`` is not a bool.
        PretrainedUnavailable: the MiniLM package is missing or its files are corrupt.
    """
    max_tokens = whole_number(max_tokens, "max_tokens", 2, MAX_POSITIONS, " ([CLS] and [SEP] included)")
    sentences, padding = sentence_list(sentences), flag(padding, "padding")
    model, tokenizer = load_minilm()
    encodings = wordpiece_encode(sentences) if sentences else []
    if not any(len(e.ids) > sum(e.special_tokens_mask) for e in encodings):
        raise ValueError("no tokens: type at least one word")

    sep_id = tokenizer.token_to_id("[SEP]")
    pad_id = tokenizer.token_to_id(PAD)
    ids, tokens, truncated = [], [], []
    for e in encodings:
        cut = len(e.ids) > max_tokens
        ids.append(e.ids[:max_tokens - 1] + [sep_id] if cut else list(e.ids))
        tokens.append(e.tokens[:max_tokens - 1] + ["[SEP]"] if cut else list(e.tokens))
        truncated.append(cut)
    lengths = [len(t) for t in ids]
    width = max(lengths)
    batch = TokenBatch(
        tokens=tuple(tuple(t) + (PAD,) * (width - len(t)) for t in tokens),
        lengths=tuple(lengths),
        truncated=tuple(truncated),
    )
    input_ids = torch.tensor([t + [pad_id] * (width - len(t)) for t in ids], dtype=torch.long)  # [batch, pos]
    real = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]  # [batch, pos]
    attention_mask = real.long() if padding else torch.ones_like(input_ids)
    mask = build_mask(batch, causal=False, padding=padding)  # [batch, 1, query_pos, key_pos] or None

    with torch.no_grad(), capture(model, only) as stages:
        model(input_ids, attention_mask, n_layers=n_layers)
    return Trace(
        tokens=batch.tokens, lengths=batch.lengths, truncated=batch.truncated,
        mask=None if mask is None else mask.numpy(),
        stages={name: t.numpy() for name, t in stages.items()},
        settings={"model": "minilm", "padding": padding, "max_tokens": max_tokens,
                  "d_model": MINILM_CONFIG.d_model, "n_heads": MINILM_CONFIG.n_heads,
                  "n_layers": MINILM_CONFIG.n_layers},
    )
