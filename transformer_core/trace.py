"""A frozen record of one forward pass: tokens, masks and every captured stage.

Pages, figures, exports and tests all read from a :class:`Trace`, so what is shown is
exactly what :func:`~transformer_core.hooks.capture` recorded. Arrays are NumPy float32
(picklable, cheap to cache by value).

Stage keys are capture names: ``layers.{i}.attention.{q,k,v,scores,masked_scores,weights,
context,concat,projected,output}`` and ``layers.{i}.feed_forward.{hidden,output}``.
Shape legend: batch, head, query_pos, key_pos, d_head, d_model.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from . import masks
from .config import EncoderConfig
from .embedding import embed_tokens
from .encoder import Encoder
from .hooks import capture
from .tokenize import TokenBatch, batch_tokens

# Stages whose matrices are [query_pos, key_pos] (the rest have feature columns).
PATTERN_STAGES = ("scores", "masked_scores", "weights", "dropped_weights")
ATTENTION_STAGES = ("q", "k", "v", "scores", "masked_scores", "weights", "context", "concat", "projected", "output")


@dataclass(frozen=True)
class Trace:
    """Everything one forward pass captured.

    Attributes:
        tokens: ``[batch][pos]`` token strings, padded with ``[PAD]``.
        lengths: real tokens per sentence.
        truncated: whether each sentence was cut.
        mask: bool ``[batch, 1, query_pos, key_pos]`` (``True`` = may attend), or ``None``.
        stages: capture name → float32 array.
        settings: JSON-friendly description of what produced the trace (model, sizes, masks, seed).
    """

    tokens: tuple[tuple[str, ...], ...]
    lengths: tuple[int, ...]
    truncated: tuple[bool, ...]
    mask: np.ndarray | None
    stages: dict[str, np.ndarray] = field(repr=False)
    settings: dict = field(default_factory=dict)

    @property
    def n_layers(self) -> int:
        return len({k.split(".")[1] for k in self.stages if k.startswith("layers.")})

    @property
    def n_heads(self) -> int:
        weights = next(k for k in self.stages if k.startswith("layers.") and k.endswith(".attention.weights"))
        return self.stages[weights].shape[1]

    def stage(self, name: str, layer: int = 0) -> np.ndarray:
        """One attention stage of one layer, e.g. ``stage("weights")`` → ``[batch, head, query_pos, key_pos]``.

        Raises:
            KeyError: no such stage or layer (message lists what exists).
        """
        for key in (f"layers.{layer}.attention.{name}", f"layers.{layer}.{name}", name):
            if key in self.stages:
                return self.stages[key]
        raise KeyError(f"no stage {name!r} in layer {layer}; have {sorted(self.stages)}")

    def visible(self, batch: int) -> np.ndarray:
        """bool ``[query_pos, key_pos]`` for sentence ``batch``: True = may attend."""
        n = len(self.tokens[batch])
        if self.mask is None:
            return np.ones((n, n), dtype=bool)
        return np.broadcast_to(self.mask[batch, 0], (n, n))

    def empty_rows(self, batch: int) -> np.ndarray:
        """bool ``[query_pos]``: rows with no visible key (their weights and context are 0)."""
        return ~self.visible(batch).any(axis=-1)


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


def run_toy(sentences: list[str], config: EncoderConfig, *, tokenizer: str = "word",
            causal: bool = False, padding: bool = True, max_tokens: int = 64) -> Trace:
    """Run the random-weight encoder on ``sentences`` and capture every stage.

    Same inputs ⇒ bit-identical trace (weights and embeddings are seeded by ``config.seed``).

    Raises:
        ValueError: no sentence has a token, or a bad tokenizer name.
    """
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
