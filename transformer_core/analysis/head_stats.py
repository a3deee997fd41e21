"""Per-head statistics of the attention weights: what each of a model's heads tends to do.

Pure NumPy/pandas over a :class:`~transformer_core.records.trace.Trace` (no torch, no Streamlit).
Every statistic is computed per *query row* of ``weights [head, query_pos, key_pos]`` and
averaged over the **real** query rows (``pos < length``: a ``[PAD]`` query is not a token of
the sentence), except ``max_weight``, the largest weight any real query gives any key.

* ``entropy`` — ``−Σ_j w_ij ln w_ij`` in nats (``0 ln 0 = 0``): 0 when a query puts all its
  weight on one key, ``ln n`` when it spreads evenly over ``n`` keys;
* ``mean_distance`` — ``Σ_j w_ij |i − j|`` in positions: how far away a query looks;
* ``max_weight`` — ``max_ij w_ij`` over real queries;
* ``cls_share`` / ``sep_share`` / ``pad_share`` — ``Σ_{j ∈ [CLS]} w_ij`` (and for ``[SEP]``,
  ``[PAD]``): the share of a query's attention that goes to those keys;
* ``sink_share`` (decoders, :func:`decoder_head_stats`) — the mean weight on the first token over query
  rows i ≥ 1 (the "attention sink").

Special keys are found by **position**, not by string (:func:`special_positions`): ``[PAD]`` is
every position from the sentence's length on, ``[CLS]`` position 0 and ``[SEP]`` position
``length − 1`` where the tokenizer put them there. Typed text never counts (the tokenizers
encode a typed ``"[PAD]"`` as ``[``, ``pad``, ``]``; even a token string ``"[PAD]"`` inside
the sentence would not be counted).

Shape legend: batch, head, query_pos, key_pos.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..records.trace import Trace

CLS, SEP, PAD = "[CLS]", "[SEP]", "[PAD]"
SPECIAL_TOKENS = (CLS, SEP, PAD)
COLUMNS = ("layer", "head", "entropy", "mean_distance", "max_weight", "cls_share", "sep_share", "pad_share")
_ROW_STATS = ("entropy", "mean_distance", "max_weight", "cls_share", "sep_share", "pad_share")


def special_positions(tokens, length: int | None = None) -> dict[str, np.ndarray]:
    """bool ``[key_pos]`` for each of ``"[CLS]"``, ``"[SEP]"``, ``"[PAD]"``, found by position.

    ``[PAD]``: positions ``≥ length``; ``[CLS]``: position 0 and ``[SEP]``: position
    ``length − 1``, each only when that token is there (the toy model's word tokenizer adds
    neither). ``length`` (real tokens, ``Trace.lengths[b]``) defaults to ``len(tokens)``
    less its trailing ``[PAD]`` run.
    """
    tokens = tuple(tokens)
    n = len(tokens)
    if length is None:
        length = n
        while length and tokens[length - 1] == PAD:
            length -= 1
    length = max(0, min(int(length), n))
    out = {name: np.zeros(n, dtype=bool) for name in SPECIAL_TOKENS}
    out[PAD][length:] = True
    if length and tokens[0] == CLS:
        out[CLS][0] = True
    if length and tokens[length - 1] == SEP:
        out[SEP][length - 1] = True
    return out


def special_keys(tokens, which=SPECIAL_TOKENS, length: int | None = None) -> np.ndarray:
    """bool ``[key_pos]``: True at the positions of ``which`` (default [CLS], [SEP], [PAD]); see
    :func:`special_positions`."""
    found = special_positions(tokens, length)
    keys = np.zeros(len(found[PAD]), dtype=bool)
    for name in which:
        keys |= found[name]
    return keys


def row_stats(weights: np.ndarray, tokens, length: int | None = None) -> dict[str, np.ndarray]:
    """Each statistic per head and query row: ``weights [head, query_pos, key_pos]`` → ``[head, query_pos]``.

    ``tokens`` (length ``key_pos``) and ``length`` (real tokens) place the [CLS]/[SEP]/[PAD]
    keys (:func:`special_positions`). Weights are used as given (masked keys hold 0 and add
    nothing); NaN counts as 0.

    Raises:
        ValueError: ``weights`` is not 3-D or ``tokens`` does not match ``key_pos``.
    """
    w = np.nan_to_num(np.asarray(weights, dtype=np.float64), nan=0.0)
    if w.ndim != 3:
        raise ValueError(f"weights must be [head, query_pos, key_pos], got shape {w.shape}")
    n_query, n_key = w.shape[1:]
    if len(tokens) != n_key:
        raise ValueError(f"{len(tokens)} tokens for {n_key} key positions")
    positive = w > 0
    logs = np.log(np.where(positive, w, 1.0))
    distance = np.abs(np.arange(n_query)[:, None] - np.arange(n_key)[None, :])  # [query_pos, key_pos]
    special = special_positions(tokens, length)
    return {
        "entropy": -(w * logs).sum(-1),
        "mean_distance": (w * distance).sum(-1),
        "max_weight": w.max(-1) if n_key else np.zeros(w.shape[:2]),
        "cls_share": w[..., special[CLS]].sum(-1),
        "sep_share": w[..., special[SEP]].sum(-1),
        "pad_share": w[..., special[PAD]].sum(-1),
    }


def pattern_stats(weights: np.ndarray, tokens, n_real: int | None = None) -> dict[str, np.ndarray]:
    """Statistics per head (``[head]`` arrays) of one sentence's ``weights [head, query_pos, key_pos]``.

    Averages over the first ``n_real`` query rows (default: all rows); ``n_real`` is also the
    sentence length that places the [PAD] keys. NaN for every statistic when there is no real row.
    """
    rows = row_stats(weights, tokens, n_real)
    n_real = np.asarray(weights).shape[1] if n_real is None else int(n_real)
    return _reduce([{k: v[:, :n_real] for k, v in rows.items()}])


def _reduce(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Per-row statistics of several sentences (``[head, rows_b]`` each) → per-head values."""
    joined = {k: np.concatenate([p[k] for p in parts], axis=1) for k in _ROW_STATS}
    n_heads, n_rows = joined["entropy"].shape
    if n_rows == 0:
        return {k: np.full(n_heads, np.nan) for k in _ROW_STATS}
    out = {k: v.mean(axis=1) for k, v in joined.items()}
    out["max_weight"] = joined["max_weight"].max(axis=1)
    return out


def head_stats(trace: Trace, batch: int | None = 0) -> pd.DataFrame:
    """One row per layer × head (layer-major), columns :data:`COLUMNS`.

    ``batch`` chooses the sentence; ``None`` pools the real query rows of every sentence.
    Reads the ``weights`` stage of each layer of ``trace``.
    """
    sentences = range(len(trace.tokens)) if batch is None else [batch]
    records = []
    for layer in range(trace.n_layers):
        weights = trace.stage("weights", layer)  # [batch, head, query_pos, key_pos]
        parts = []
        for b in sentences:
            rows = row_stats(weights[b], trace.tokens[b], trace.lengths[b])
            parts.append({k: v[:, :trace.lengths[b]] for k, v in rows.items()})
        stats = _reduce(parts)
        for head in range(weights.shape[1]):
            records.append({"layer": layer, "head": head, **{k: float(stats[k][head]) for k in _ROW_STATS}})
    return pd.DataFrame.from_records(records, columns=list(COLUMNS))


def sink_share(weights: np.ndarray) -> np.ndarray:
    """Share of attention each head gives the first token (the "attention sink"; Xiao et al., "Efficient Streaming
    Language Models with Attention Sinks" (2024), §3.1): ``weights [head, query_pos, key_pos]`` → ``[head]``, the
    mean of ``w[:, i, 0]`` over query rows i ≥ 1 (row 0 can only look at itself); NaN for a one-token text."""
    weights = np.asarray(weights)
    if weights.shape[1] < 2:
        return np.full(weights.shape[0], np.nan)
    return weights[:, 1:, 0].mean(axis=1)


def decoder_head_stats(trace: Trace) -> pd.DataFrame:
    """One row per layer × head (layer-major) of a decoder's one-prompt trace (SmolLM2 or a local checkpoint,
    :func:`~transformer_core.models.smollm2_trace.run_smollm2`): ``layer``, ``head``, ``kv_head`` (the key/value head
    it shares: ``head // (n_heads / n_kv_heads)`` from the trace's settings, SmolLM2's 9 and 3 when they are not
    there), ``entropy`` (nats), ``mean_distance`` (positions), ``max_weight`` (as above, over all query rows) and
    ``sink_share`` (:func:`sink_share`)."""
    group = trace.settings.get("n_heads", 9) // trace.settings.get("n_kv_heads", 3)
    records = []
    for layer in range(trace.n_layers):
        weights = trace.stage("weights", layer)[0]  # [head, query_pos, key_pos]
        rows = row_stats(weights, trace.tokens[0], trace.lengths[0])
        sinks = sink_share(weights)
        for head in range(weights.shape[0]):
            records.append({"layer": layer, "head": head, "kv_head": head // group,
                            "entropy": float(rows["entropy"][head].mean()),
                            "mean_distance": float(rows["mean_distance"][head].mean()),
                            "max_weight": float(rows["max_weight"][head].max()),
                            "sink_share": float(sinks[head])})
    return pd.DataFrame.from_records(records)
