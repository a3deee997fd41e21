"""A small frozen configuration for the toy encoder (the explorer's random-weight model).

Frozen ⇒ hashable ⇒ usable as a cache key. Validation names the bad value
(pattern from nanoGPT's ``GPTConfig`` and TransformerLens'
``HookedTransformerConfig.__post_init__``).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

from ..text.i18n import _

ACTIVATIONS = ("relu", "gelu")


def whole(value) -> int | None:
    """``value`` as an int if it is an integer (Python's or NumPy's; not a bool, not a float), else None. The one
    integer test of the package's sizes, seeds and counts (``EncoderConfig``, ``run_minilm``)."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


@dataclass(frozen=True)
class EncoderConfig:
    """Sizes of a post-LN Transformer encoder ("Attention Is All You Need", §3).

    Raises:
        ValueError: a size is not a positive integer, ``n_heads`` does not divide
            ``d_model``, ``n_kv_heads`` does not divide ``n_heads``, ``dropout`` is outside [0, 1), or
            ``activation`` is unknown.
            The message names the bad value.
    """

    d_model: int = 64  # width of every token vector
    n_heads: int = 8  # attention heads; d_k = d_model // n_heads
    d_ff: int = 256  # hidden width of the feed-forward network (4 × d_model is usual)
    n_layers: int = 1  # encoder layers in the stack
    dropout: float = 0.0  # applied after softmax, after W_O and after W_2 (training mode only)
    activation: str = "relu"  # "relu" as in the seeds, "gelu" as in BERT
    layer_norm_eps: float = 1e-5  # nn.LayerNorm default; BERT uses 1e-12
    seed: int = 0  # seeds the random weights and token embeddings
    n_kv_heads: int | None = None  # key/value heads shared by the query heads (GQA); None = n_heads (no sharing)

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "d_ff", "n_layers"):
            value = getattr(self, name)
            if whole(value) is None or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
            object.__setattr__(self, name, whole(value))  # NumPy's integers too, stored as int
        if self.d_model % self.n_heads:
            raise ValueError(_("n_heads={n_heads} does not divide d_model={d_model}; choose one of {choices}").format(
                n_heads=self.n_heads, d_model=self.d_model, choices=divisors(self.d_model)))  # a CLI user's error
        if isinstance(self.dropout, bool) or not isinstance(self.dropout, (int, float)) or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if whole(self.seed) is None or not 0 <= self.seed < 2**63:  # torch.manual_seed takes a signed 64-bit int
            raise ValueError(f"seed must be an integer in [0, 2**63), got {self.seed!r}")
        object.__setattr__(self, "seed", whole(self.seed))
        n_kv = self.n_heads if self.n_kv_heads is None else self.n_kv_heads
        if whole(n_kv) is None or n_kv <= 0 or self.n_heads % n_kv:
            raise ValueError(f"n_kv_heads must divide n_heads={self.n_heads} (one of {divisors(self.n_heads)}), "
                             f"got {self.n_kv_heads!r}")
        object.__setattr__(self, "n_kv_heads", whole(n_kv))
        eps = self.layer_norm_eps
        if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 < eps < 1:  # also NaN and inf
            raise ValueError(f"layer_norm_eps must be a number in (0, 1), got {eps!r}")

    @property
    def d_k(self) -> int:
        """Width of one head's query/key/value vectors (d_k = d_v = d_head = d_model / n_heads)."""
        return self.d_model // self.n_heads


def divisors(n: int) -> list[int]:
    """All positive divisors of ``n`` in increasing order: the valid head counts for d_model = n."""
    return [h for h in range(1, n + 1) if n % h == 0]
