"""A frozen record of one forward pass: tokens, masks and every captured stage.

Pages, figures, exports and tests all read from a :class:`Trace`, so what is shown is
exactly what :func:`~transformer_core.nn.hooks.capture` recorded. Arrays are NumPy float32
(picklable, cheap to cache by value).

Stage keys are capture names: ``layers.{i}.attention.{q,k,v,scores,masked_scores,weights,
context,concat,projected,output}`` and ``layers.{i}.feed_forward.{hidden,output}``.
Shape legend: batch, head, query_pos, key_pos, d_head, d_model.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Stages whose matrices are [query_pos, key_pos] (the rest have feature columns). "norms" (‖α_ij f_h(x_j)‖) is
# derived from weights, v and the model's W_O (analysis.value_norms.with_norms), never captured.
PATTERN_STAGES = ("scores", "masked_scores", "weights", "dropped_weights", "norms")
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

    def has(self, name: str, layer: int = 0) -> bool:
        """Whether :meth:`stage` finds ``name`` in ``layer`` (a reopened file may hold only some stages)."""
        return any(key in self.stages for key in (f"layers.{layer}.attention.{name}", f"layers.{layer}.{name}", name))

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
