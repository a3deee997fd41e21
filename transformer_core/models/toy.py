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


def build_mask(batch: TokenBatch, causal: bool, padding: bool, window: int | None = None,
               sinks: int = 0) -> torch.Tensor | None:
    """Our-convention mask ``[batch, 1, query_pos, key_pos]`` from the two toggles, or ``None``.

    ``window``: a causal sliding window of that many keys (the query and the ``window − 1`` before it) plus the
    first ``sinks`` keys (:func:`~transformer_core.nn.masks.sliding_window_mask`); it looks back only, so it
    includes the causal mask whatever ``causal`` says. ``None``: no window (``sinks`` is then ignored).
    """
    n = batch.max_len
    parts = []
    if causal:
        parts.append(masks.causal_mask(n)[None, None])  # [1, 1, query_pos, key_pos]
    if window is not None:
        parts.append(masks.sliding_window_mask(n, window=window, sinks=sinks)[None, None])
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
            causal: bool = False, padding: bool = True, max_tokens: int = 64,
            window: int | None = None, sinks: int = 0) -> Trace:
    """Run the random-weight encoder on ``sentences`` and capture every stage.

    ``config.n_kv_heads`` < ``n_heads`` shares key/value heads (query head h reads key/value head
    h // (n_heads / n_kv_heads)); the trace's ``k`` and ``v`` stay one per query head (shared heads repeated) and
    its settings say ``n_kv_heads``. ``window``/``sinks``: a sliding-window mask with sinks (:func:`build_mask`),
    recorded in the settings only when a window is set (a trace without one is as before).

    Same inputs ⇒ bit-identical trace (weights and embeddings are seeded by ``config.seed``).

    Raises:
        ValueError: no sentence has a token, a bad tokenizer name, ``window < 1`` or ``sinks < 0``.
        TypeError: ``sentences`` is one string, ``config`` is not an :class:`EncoderConfig`, or ``causal`` /
            ``padding`` is not a bool.
    """
    if not isinstance(config, EncoderConfig):
        raise TypeError(f"config must be an EncoderConfig, got {type(config).__name__}")
    causal, padding = flag(causal, "causal"), flag(padding, "padding")
    batch = batch_tokens(sentences, tokenizer, max_tokens)
    if batch.max_len == 0:
        raise ValueError("no tokens: type at least one word")
    mask = build_mask(batch, causal, padding, window, sinks)
    model = Encoder(config).eval()
    x = embed_tokens(batch.tokens, config.d_model, config.seed)  # [batch, pos, d_model]
    with torch.no_grad(), capture(model) as stages:
        model(x, mask)
    arrays = {"embeddings": x.numpy()} | {name: t.numpy() for name, t in stages.items()}
    return Trace(
        tokens=batch.tokens, lengths=batch.lengths, truncated=batch.truncated,
        mask=None if mask is None else mask.numpy(), stages=arrays,
        settings={"model": "toy", "tokenizer": tokenizer, "causal": causal, "padding": padding,
                  "max_tokens": max_tokens, **config.__dict__,
                  **({"window": int(window), "sinks": int(sinks)} if window is not None else {})},
    )
