"""Encoder layer (attention + feed-forward) and a stack of them, built from :class:`EncoderConfig`.

Post-LN as in "Attention Is All You Need" §3.1, both seeds, and BERT.
Shape legend: batch, pos, d_model. Mask convention: ``True`` = may attend.
"""
from __future__ import annotations

import torch
from torch import nn

from .attention import MultiHeadAttention
from .config import EncoderConfig
from .feed_forward import PositionwiseFeedForward


class EncoderLayer(nn.Module):
    """``x → attention(x, x, x, mask) → feed_forward``; stage names ``attention.*``, ``feed_forward.*``."""

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.attention = MultiHeadAttention(config.d_model, config.n_heads, config.dropout,
                                            layer_norm_eps=config.layer_norm_eps)
        self.feed_forward = PositionwiseFeedForward(config.d_model, config.d_ff, config.dropout,
                                                    config.activation, layer_norm_eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``x [batch, pos, d_model]``, mask broadcastable to ``[batch, head, query_pos, key_pos]``."""
        x, _ = self.attention(x, x, x, mask)
        return self.feed_forward(x)


class Encoder(nn.Module):
    """``n_layers`` encoder layers; stage names ``layers.{i}.attention.weights`` etc.

    Weights are drawn from ``torch.Generator`` seeded with ``config.seed``: same config ⇒
    bit-identical weights, whatever else the process has done with the global RNG.
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.config = config
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.n_layers))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, mask)
        return x
