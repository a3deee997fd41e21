"""What a head moves, not only where it looks: value-weighted norms ‖α_ij · f_h(x_j)‖.

Kobayashi et al., "Attention is Not Only a Weight: Analyzing Transformers with Vector Norms"
(EMNLP 2020), §3: the output of multi-head attention at query position i is

    y_i = Σ_h Σ_j α_ij^h · f_h(x_j) + b_O,    f_h(x_j) = v_j^h W_O^h,

where v_j^h is head h's value vector of key position j (bias of W_V included), W_O^h the
``d_head`` rows of W_O that multiply head h's slice of the concatenated context, and b_O the
output bias, shared by all heads and left out of every norm. A head may put most of its weight
α on ``[CLS]``/``[SEP]`` whose f_h(x_j) is short, and so move almost nothing there.

W_O is read from the model's own weights (:func:`output_projections`), never from the trace:
a trace records activations, not parameters.

Shape legend: batch, head, query_pos, key_pos, d_head, d_model. W_O in the math convention
``concat @ W_O`` ``[d_model (= head·d_head), d_model]`` = ``nn.Linear.weight.T``.
Mask convention: ``True`` = may attend; a blocked key has α = 0, so its norm is 0.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..records.trace import Trace


def split_output_projection(W_O: np.ndarray, n_heads: int) -> np.ndarray:
    """W_O ``[d_model, d_model]`` (rows = concatenated heads' dimensions) → per head ``[head, d_head, d_model]``.

    Raises:
        ValueError: W_O is not square 2-D or ``n_heads`` does not divide its rows.
    """
    W_O = np.asarray(W_O)
    if W_O.ndim != 2 or W_O.shape[0] % n_heads:
        raise ValueError(f"W_O must be [n_heads·d_head, d_model] with n_heads={n_heads}, got shape {W_O.shape}")
    return W_O.reshape(n_heads, W_O.shape[0] // n_heads, W_O.shape[1])  # [head, d_head, d_model]


def transformed_values(v: np.ndarray, W_O_heads: np.ndarray) -> np.ndarray:
    """f_h(x_j) = v_j^h W_O^h: ``v [..., head, key_pos, d_head]``, ``W_O_heads [head, d_head, d_model]`` →
    ``[..., head, key_pos, d_model]`` (float64)."""
    return np.einsum("...hkd,hdm->...hkm", np.asarray(v, np.float64), np.asarray(W_O_heads, np.float64))


def value_norms(v: np.ndarray, W_O_heads: np.ndarray) -> np.ndarray:
    """‖f_h(x_j)‖₂ per key: ``[..., head, key_pos]`` (float64). See :func:`transformed_values`."""
    return np.linalg.norm(transformed_values(v, W_O_heads), axis=-1)


def value_weighted_norms(weights: np.ndarray, v: np.ndarray, W_O_heads: np.ndarray) -> np.ndarray:
    """‖α_ij · f_h(x_j)‖₂ = α_ij · ‖f_h(x_j)‖₂ (α ≥ 0): ``weights [..., head, query_pos, key_pos]``,
    ``v [..., head, key_pos, d_head]`` → ``[..., head, query_pos, key_pos]`` float32.

    Kobayashi et al. (2020), Eq. 5. NaN weights (none in a capture) give NaN.
    """
    norms = value_norms(v, W_O_heads)  # [..., head, key_pos]
    return (np.asarray(weights, np.float64) * norms[..., None, :]).astype(np.float32)


def output_projections(trace: Trace) -> list[tuple[np.ndarray, np.ndarray]]:
    """``[(W_O [n_heads·d_head, d_model], b_O [d_model]) per layer]`` of the model that made ``trace``, float64,
    asked of its face (:func:`transformer_core.models.from_settings`): MiniLM, the trained causal model at the
    trace's ``step``, the toy encoder rebuilt from its config and seed (the same weights, bit for bit), SmolLM2 or
    the local checkpoint named in the settings (b_O is zeros where the model has no bias).

    Raises:
        ValueError: the trace's settings name no model these weights can be read from.
        PretrainedUnavailable / CausalUnavailable / CheckpointError: the weights cannot be loaded.
    """
    from ..models import from_settings

    return from_settings(trace.settings).output_projections()


def with_norms(trace: Trace, layers: list[int] | None = None,
               projections: list[tuple[np.ndarray, np.ndarray]] | None = None) -> Trace:
    """``trace`` plus a ``layers.{l}.attention.norms`` stage ``[batch, head, query_pos, key_pos]`` for each of
    ``layers`` (default: every layer holding both ``weights`` and ``v``).

    ``projections`` (from :func:`output_projections`) are read from the model when not given.

    Raises:
        KeyError: a layer asked for lacks ``weights`` or ``v``.
        ValueError: see :func:`output_projections`.
    """
    if layers is None:
        layers = [l for l in range(64) if f"layers.{l}.attention.weights" in trace.stages
                  and f"layers.{l}.attention.v" in trace.stages]
    projections = output_projections(trace) if projections is None else projections
    stages = dict(trace.stages)
    for l in layers:
        weights, v = trace.stage("weights", l), trace.stage("v", l)
        heads = split_output_projection(projections[l][0], weights.shape[1])
        stages[f"layers.{l}.attention.norms"] = value_weighted_norms(weights, v, heads)
    return dataclasses.replace(trace, stages=stages)


def moved_shares(weights: np.ndarray, norms: np.ndarray, keys: np.ndarray, n_real: int) -> tuple[np.ndarray, np.ndarray]:
    """``(weight share, norm share)`` per head that goes to the key positions ``keys`` (bool ``[key_pos]``).

    weight share = mean over the ``n_real`` first query rows of Σ_{j∈keys} α_ij;
    norm share = mean over the same rows of Σ_{j∈keys} ‖α_ij f(x_j)‖ / Σ_j ‖α_ij f(x_j)‖
    (a row that moves nothing counts 0). ``weights``, ``norms``: ``[head, query_pos, key_pos]`` → ``[head]``.
    """
    w = np.nan_to_num(np.asarray(weights, np.float64)[:, :n_real])
    m = np.nan_to_num(np.asarray(norms, np.float64)[:, :n_real])
    keys = np.asarray(keys, bool)
    total = m.sum(-1)
    row_share = np.divide(m[..., keys].sum(-1), total, out=np.zeros_like(total), where=total > 0)
    if n_real == 0:
        return np.zeros(w.shape[0]), np.zeros(w.shape[0])
    return w[..., keys].sum(-1).mean(-1), row_share.mean(-1)
