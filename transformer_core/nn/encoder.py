"""Encoder layer (attention + feed-forward) and a stack of them, built from :class:`EncoderConfig`.

Post-LN as in "Attention Is All You Need" §3.1, both seeds, and BERT.
Shape legend: batch, pos, d_model. Mask convention: ``True`` = may attend.

Random weights come from a ``torch.Generator`` owned by the call (:func:`build_seeded`), never
from the process-global RNG, so two threads (two app sessions) building models at once get
the numbers each would get alone.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from .attention import MultiHeadAttention
from .config import EncoderConfig
from .feed_forward import PositionwiseFeedForward


def init_parameters(module: nn.Module, generator: torch.Generator) -> nn.Module:
    """Initialise every parameter of ``module`` as PyTorch's default init does, drawing from ``generator``.

    In registration order (which is construction order): ``nn.Linear`` / ``nn.Conv1d`` weight
    ``kaiming_uniform_(a=√5)`` and bias ``U(−1/√fan_in, 1/√fan_in)`` (their ``reset_parameters``),
    ``nn.LayerNorm`` ones and zeros. So a generator seeded with
    ``s`` gives the same numbers as building the module after ``torch.manual_seed(s)``.

    Raises:
        TypeError: ``module`` holds a parameter of another kind of layer (its init is unknown here).
    """
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Conv1d)):
            nn.init.kaiming_uniform_(m.weight, a=math.sqrt(5), generator=generator)
            if m.bias is not None:
                fan_in = m.weight[0].numel()  # in_features (× kernel size)
                bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
                nn.init.uniform_(m.bias, -bound, bound, generator=generator)
        elif isinstance(m, nn.LayerNorm):
            m.reset_parameters()
        elif any(True for _ in m.parameters(recurse=False)):
            raise TypeError(f"no seeded initialisation for {type(m).__name__}")
    return module


def build_seeded(factory: Callable[[], nn.Module], generator: torch.Generator) -> nn.Module:
    """``factory()`` built without a random draw (on the ``meta`` device, thread-local), then put
    on the CPU and initialised by :func:`init_parameters` from ``generator``.

    No global state is read or changed: ``torch.manual_seed`` elsewhere, in this or another
    thread, cannot change the result. Buffers, if ``factory`` makes any, are not supported.

    Raises:
        TypeError: the module has buffers, or a layer :func:`init_parameters` does not know.
    """
    with torch.device("meta"):
        module = factory()
    if any(True for _ in module.buffers()):
        raise TypeError(f"build_seeded cannot restore the buffers of {type(module).__name__}")
    for m in module.modules():  # as module.to_empty("cpu"), without its one-off ~1 s import of torch.fx
        for name, p in list(m.named_parameters(recurse=False)):
            setattr(m, name, nn.Parameter(torch.empty(p.shape, dtype=p.dtype), requires_grad=p.requires_grad))
    return init_parameters(module, generator)


class EncoderLayer(nn.Module):
    """``x → attention(x, x, x, mask) → feed_forward``; stage names ``attention.*``, ``feed_forward.*``."""

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.attention = MultiHeadAttention(config.d_model, config.n_heads, config.dropout,
                                            layer_norm_eps=config.layer_norm_eps, n_kv_heads=config.n_kv_heads)
        self.feed_forward = PositionwiseFeedForward(config.d_model, config.d_ff, config.dropout,
                                                    config.activation, layer_norm_eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``x [batch, pos, d_model]``, mask broadcastable to ``[batch, head, query_pos, key_pos]``."""
        x, _ = self.attention(x, x, x, mask)
        return self.feed_forward(x)


class Encoder(nn.Module):
    """``n_layers`` encoder layers; stage names ``layers.{i}.attention.weights`` etc.

    Weights are drawn from a new ``torch.Generator`` seeded with ``config.seed``
    (:func:`build_seeded`): same config ⇒ bit-identical weights, whatever any thread does with
    the global RNG, and the same numbers as ``torch.manual_seed(config.seed)`` then building.
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.config = config
        self.layers = build_seeded(lambda: nn.ModuleList(EncoderLayer(config) for _ in range(config.n_layers)),
                                   torch.Generator().manual_seed(config.seed))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, mask)
        return x
