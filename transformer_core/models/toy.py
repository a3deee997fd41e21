"""The toy model: a random-weight encoder (seeded by ``config.seed``) run on typed sentences.

:func:`run_toy` tokenizes, embeds (seeded token vectors + sinusoidal positions), builds the
mask from the two toggles and records every stage into a :class:`~transformer_core.records.trace.Trace`.
Mask convention: ``True`` = may attend. Shape legend: batch, head, query_pos, key_pos, d_model.
"""
from __future__ import annotations

import numpy as np
import torch

from ..nn import masks
from ..nn.config import EncoderConfig
from ..nn.embedding import embed_tokens
from ..nn.encoder import Encoder
from ..nn.hooks import capture
from ..records.trace import Trace
from ..text.tokenize import TokenBatch, batch_tokens


def build_mask(batch: TokenBatch, causal: bool, padding: bool) -> torch.Tensor | None:
    """Our-convention mask ``[batch, 1, query_pos, key_pos]`` from the two toggles, or ``None``."""
    n = batch.max_len
    parts = []
    if causal:
        parts.append(masks.causal_mask(n)[None, None])  # [1, 1, query_pos, key_pos]
    if padding:
        parts.append(masks.padding_mask(batch.lengths, n))  # [batch, 1, 1, key_pos]
    mask = masks.combine(*parts)
    if mask is None:
        return None
    return mask.expand(len(batch.lengths), 1, n, n)


def flag(value, name: str) -> bool:
    """``value`` as a bool when it is one (``True``/``False``, NumPy's too); ``TypeError`` otherwise: the string
    ``"no"`` is truthy and would silently mean on."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def run_toy(sentences: list[str], config: EncoderConfig, *, tokenizer: str = "word",
            causal: bool = False, padding: bool = True, max_tokens: int = 64) -> Trace:
    """Run the random-weight encoder on ``sentences`` and capture every stage.

    Same inputs ⇒ bit-identical trace (weights and embeddings are seeded by ``config.seed``).

    Raises:
        ValueError: no sentence has a token, or a bad tokenizer name.
        TypeError: ``sentences`` is one string, ``config`` is not an :class:`EncoderConfig`, or ``causal`` /
            ``padding`` is not a bool.
    """
    if not isinstance(config, EncoderConfig):
        raise TypeError(f"config must be an EncoderConfig, got {type(config).__name__}")
    causal, padding = flag(causal, "causal"), flag(padding, "padding")
    batch = batch_tokens(sentences, tokenizer, max_tokens)
    if batch.max_len == 0:
        raise ValueError("no tokens: type at least one word")
    mask = build_mask(batch, causal, padding)
    model = Encoder(config).eval()
    x = embed_tokens(batch.tokens, config.d_model, config.seed)  # [batch, pos, d_model]
    with torch.no_grad(), capture(model) as stages:
        model(x, mask)
    arrays = {"embeddings": x.numpy()} | {name: t.numpy() for name, t in stages.items()}
    return Trace(
        tokens=batch.tokens, lengths=batch.lengths, truncated=batch.truncated,
        mask=None if mask is None else mask.numpy(), stages=arrays,
        settings={"model": "toy", "tokenizer": tokenizer, "causal": causal, "padding": padding,
                  "max_tokens": max_tokens, **config.__dict__},
    )
