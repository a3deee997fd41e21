"""One (query, key) pair of a sentence across every layer and head: where does token i look at token j?

For the pair (i, j) each head h of layer l gives α_ij (its attention weight) and ‖α_ij f_h(x_j)‖
(the value-weighted norm of :mod:`~transformer_core.analysis.value_norms`: what it moves from j
to i). :func:`pair_table` ranks all layer × head by both (rank 1 = largest). Answers bertviz #111
("one word pair summarised across all layers and heads").

Shape legend: layer, head, query_pos, key_pos.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = ("layer", "head", "weight", "weight_rank", "norm", "norm_rank", "norm_share")


def pair_table(weights: np.ndarray, norms: np.ndarray, query: int, key: int) -> pd.DataFrame:
    """Every layer × head for query ``query`` and key ``key``, sorted by weight (largest first).

    Args:
        weights: α ``[layer, head, query_pos, key_pos]`` of one sentence.
        norms: ‖α f(x)‖ of the same shape.
        query, key: positions.

    Columns :data:`COLUMNS`: ``weight`` α_ij, ``norm`` ‖α_ij f_h(x_j)‖, their ranks among all
    heads (1 = largest; ties share the lower rank), ``norm_share`` = norm ÷ Σ_j′ ‖α_ij′ f_h(x_j′)‖
    (what share of all that head moves into i comes from j; 0 when it moves nothing).

    Raises:
        IndexError: ``query`` or ``key`` out of range.
    """
    w = np.asarray(weights, np.float64)
    m = np.asarray(norms, np.float64)
    n_q, n_k = w.shape[-2:]
    if not (0 <= query < n_q and 0 <= key < n_k):
        raise IndexError(f"pair ({query}, {key}) out of range for {n_q} query and {n_k} key positions")
    n_layers, n_heads = w.shape[:2]
    a = np.nan_to_num(w[:, :, query, key]).ravel()
    b = np.nan_to_num(m[:, :, query, key]).ravel()
    row = np.nan_to_num(m[:, :, query, :]).sum(-1).ravel()
    frame = pd.DataFrame({
        "layer": np.repeat(np.arange(n_layers), n_heads), "head": np.tile(np.arange(n_heads), n_layers),
        "weight": a, "norm": b,
        "norm_share": np.divide(b, row, out=np.zeros_like(b), where=row > 0),
    })
    frame["weight_rank"] = frame["weight"].rank(ascending=False, method="min").astype(int)
    frame["norm_rank"] = frame["norm"].rank(ascending=False, method="min").astype(int)
    return frame.sort_values(["weight_rank", "layer", "head"], kind="stable")[list(COLUMNS)].reset_index(drop=True)
