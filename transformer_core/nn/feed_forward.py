"""Position-wise feed-forward network with a post-LN residual ("Attention Is All You Need", §3.3).

``FFN(x) = W_2 act(W_1 x + b_1) + b_2``, then ``norm(x + dropout(FFN(x)))``. Seed 001
(``PoswiseFeedForwardNet``) writes W_1 and W_2 as ``nn.Conv1d(kernel_size=1)`` over
``[batch, d_model, pos]``: a kernel-1 convolution is the same map as a Linear applied at
every position (its weight ``[out, in, 1]`` squeezed is the Linear's ``[out, in]``).

Shape legend: batch, pos, d_model, d_ff.
"""
from __future__ import annotations

import torch
from torch import nn

from .hooks import HookPoint

_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU}


class PositionwiseFeedForward(nn.Module):
    """Two Linear layers with ReLU (seeds) or GELU (BERT) between, post-LN residual.

    Hook points: ``hidden`` (after the activation) ``[batch, pos, d_ff]`` and
    ``output`` (after residual and LayerNorm) ``[batch, pos, d_model]``.

    Raises:
        ValueError: unknown ``activation`` or a size that is not positive.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu",
                 *, layer_norm_eps: float = 1e-5) -> None:
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
        if d_model <= 0 or d_ff <= 0:
            raise ValueError(f"d_model and d_ff must be positive, got d_model={d_model}, d_ff={d_ff}")
        self.W_1 = nn.Linear(d_model, d_ff)
        self.W_2 = nn.Linear(d_ff, d_model)
        self.activation = _ACTIVATIONS[activation]()
        self.dropout = nn.Dropout(dropout)
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.hook_hidden = HookPoint()
        self.hook_output = HookPoint()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x [batch, pos, d_model]`` → ``[batch, pos, d_model]``."""
        hidden = self.hook_hidden(self.activation(self.W_1(x)))  # [batch, pos, d_ff]
        return self.hook_output(self.norm(x + self.dropout(self.W_2(hidden))))
