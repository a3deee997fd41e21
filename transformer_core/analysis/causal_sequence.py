"""Measures of the trained causal model on one token sequence: the sequence itself (a random period repeated), its
period, each head's previous-token and induction score, the mean loss on the first period and on the repeats, and
how much weight falls on future keys when the causal mask is taken away.

What the causal page shows, reachable from the command line and a notebook::

    from transformer_core.analysis import causal_sequence as cs
    from transformer_core.models.causal import run_causal
    ids = cs.repeated_sequence(16, seed=0)        # 32 ids: 16 random ones, twice
    trace = run_causal(ids)
    cs.sequence_scores(trace, cs.detect_period(ids))["induction"][1]   # layer 1's four heads

Scores are those of Olsson et al. (2022): previous-token = mean weight on key = query − 1, induction = mean weight
on key = query − period + 1 over the second period's queries (:func:`~transformer_core.models.causal.induction_score`).
Shape legend: layer, head, query_pos, key_pos, pos.
"""
from __future__ import annotations

import numpy as np
import torch

from ..models.causal import CAUSAL_CONFIG, induction_score, previous_token_score, repeated_tokens
from ..records.trace import Trace


def repeated_sequence(period: int, seed: int, length: int | None = None, vocab_size: int = CAUSAL_CONFIG.vocab_size,
                      max_positions: int = CAUSAL_CONFIG.max_positions) -> list[int]:
    """``period`` random token ids in ``[0, vocab_size)`` (from a local generator seeded with ``seed``, so the same
    on every machine and thread) repeated to ``length`` ids (default: twice, capped at ``max_positions``, the causal
    model's 48)."""
    length = min(max_positions, 2 * period) if length is None else length
    return repeated_tokens(1, period, length, vocab_size, torch.Generator().manual_seed(seed))[0].tolist()


def detect_period(ids: list[int]) -> int | None:
    """The smallest ``p`` with ``ids[i] == ids[i − p]`` for every ``i ≥ p``, if the sequence repeats at least 2
    tokens of its first period; else None (``[1, 2, 1, 2, 1]`` → 2; ``[1, 2, 3, 1]`` → None: one token repeated)."""
    for p in range(1, len(ids) - 1):
        if all(ids[i] == ids[i - p] for i in range(p, len(ids))):
            return p if len(ids) - p >= 2 else None
    return None


def sequence_scores(trace: Trace, period: int | None) -> dict:
    """Previous-token and induction score of every head on this one sequence:
    ``{"previous_token": [layer][head], "induction": [layer][head]}`` of floats.

    A score with nothing to average is None, never NaN: previous-token for a one-token sequence (no query has a
    previous token), induction without a period or with fewer than 2 repeated tokens."""
    out = {"previous_token": [], "induction": []}
    for layer in range(trace.n_layers):
        # a copy (a cached trace's arrays are read-only): [batch, head, query_pos, key_pos]
        w = torch.tensor(trace.stage("weights", layer))
        out["previous_token"].append(previous_token_score(w).tolist() if w.shape[-1] >= 2 else [None] * w.shape[1])
        ok = period is not None and w.shape[-1] - period >= 2
        out["induction"].append(induction_score(w, period).tolist() if ok else [None] * w.shape[1])
    return out


def loss_summary(trace: Trace, period: int | None) -> dict:
    """Mean loss (nats) on the whole sequence (``"all"``), the first period (``"first"``) and the repeats
    (``"repeat"``), from the trace's ``token_loss`` ``[batch, pos − 1]`` (entry t predicts token t + 1); the last two
    only with a period no longer than the predictions.

    A mean over no prediction is None, never NaN: ``"all"`` for a one-token sequence (there is no next token),
    ``"first"`` for a period of 1 (every prediction is a repeat)."""
    loss = trace.stages["token_loss"][0]  # [pos-1]
    out = {"all": float(loss.mean()) if len(loss) else None}
    if period is not None and len(loss) >= period:
        out["first"] = float(loss[:period - 1].mean()) if period > 1 else None
        out["repeat"] = float(loss[period - 1:].mean())
    return out


def future_share(trace: Trace) -> float:
    """Mean, over every layer, head and query of the first sentence, of the weight on keys after the query (a
    share, 0 to 1; exactly 0 under the causal mask)."""
    shares = []
    for layer in range(trace.n_layers):
        w = trace.stage("weights", layer)[0]  # [head, query_pos, key_pos]
        shares.append(np.triu(w, k=1).sum(-1).mean())
    return float(np.mean(shares))
