"""Head types: one score per head saying how much it behaves like a known kind of head.

Pattern scores follow TransformerLens's ``head_detector`` ("mul" measure): with a detection
pattern D (1 where a head of that type attends) and a head's weights A ``[query_pos, key_pos]``,

    score = Σ_ij A_ij D_ij / Σ_ij A_ij,   over the query rows i that have a target (Σ_j D_ij > 0).

TransformerLens divides by every row, so there a perfect previous-token head scores (n−1)/n
(row 0 has no previous token); leaving target-less rows out makes it score exactly 1, and equal
to :func:`transformer_core.models.causal.previous_token_score` on full rows. Detection patterns
(TransformerLens ``get_*_detection_pattern``, lower-triangular there; our MiniLM also looks ahead):

* ``previous_token``: D_ij = [j = i − 1];
* ``next_token``: D_ij = [j = i + 1];
* ``self``: D_ij = [j = i];
* ``duplicate_token``: D_ij = [j < i and token_j = token_i] (an earlier copy of the current token);
* ``induction``: D_ij = [1 ≤ j ≤ i and token_{j−1} = token_i] (the token after an earlier copy).

Share scores (mean over real query rows, as :mod:`~transformer_core.analysis.head_stats`):

* ``cls_share``: Σ_{j = [CLS]} A_ij;
* ``sep_punct_share``: Σ_{j ∈ [SEP] ∪ punctuation} A_ij, punctuation = a token made only of
  Unicode punctuation (category P*);
* ``broadness``: H_i / ln(k_i), the row entropy H_i = −Σ_j A_ij ln A_ij over ln of the number
  k_i of visible keys: 0 = one key, 1 = spread evenly; rows with fewer than 2 visible keys are
  left out (no choice to make), a head with none scores 0.

Every score is in [0, 1]. Shape legend: head, query_pos, key_pos. Only real positions count
(``[PAD]`` rows and keys are cut off first). Mask convention: ``True`` = may attend.
"""
from __future__ import annotations

import unicodedata

import numpy as np
import pandas as pd

from ..records.trace import Trace
from ..text.i18n import N_
from .head_stats import row_stats, special_positions

SCORES = {  # name → what the learner reads (English, marked for the catalog: translate with _() where shown)
    "previous_token": N_("previous-token"), "next_token": N_("next-token"), "self": N_("self"),
    "cls_share": N_("share to [CLS]"), "sep_punct_share": N_("share to [SEP]/punctuation"), "broadness": N_("broadness"),
    "duplicate_token": N_("duplicate-token"), "induction": N_("induction"),
}
ENCODER_SCORES = ("previous_token", "next_token", "self", "cls_share", "sep_punct_share", "broadness")
CAUSAL_SCORES = ("previous_token", "duplicate_token", "induction", "self", "broadness")


def is_punctuation(token: str) -> bool:
    """True for a non-empty token made only of Unicode punctuation (``.``, ``,``, ``!``, ``“``, ``。`` …)."""
    return bool(token) and all(unicodedata.category(c).startswith("P") for c in token)


def detection_pattern(kind: str, tokens) -> np.ndarray:
    """bool ``[query_pos, key_pos]`` D of one score kind for ``tokens`` (see the module docstring).

    Raises:
        ValueError: unknown kind.
    """
    n = len(tokens)
    i, j = np.indices((n, n))
    if kind == "previous_token":
        return j == i - 1
    if kind == "next_token":
        return j == i + 1
    if kind == "self":
        return i == j
    same = np.equal.outer(np.array(tokens, dtype=object), np.array(tokens, dtype=object)).astype(bool)
    if kind == "duplicate_token":
        return same & (j < i)
    if kind == "induction":
        shifted = np.zeros((n, n), bool)
        shifted[:, 1:] = same[:, :-1]  # D[i, j] = same[i, j − 1]
        return shifted & (j <= i)
    raise ValueError(f"unknown detection pattern {kind!r}; choose one of previous_token, next_token, self, "
                     "duplicate_token, induction")


def detection_score(weights: np.ndarray, pattern: np.ndarray) -> np.ndarray:
    """Σ A·D / Σ A over the rows where D has a target, per head: ``weights [head, q, k]``, ``pattern [q, k]`` →
    ``[head]``. 0 where no row has a target or those rows hold no weight."""
    w = np.nan_to_num(np.asarray(weights, np.float64))
    pattern = np.asarray(pattern, bool)
    rows = pattern.any(-1)
    mass = w[:, rows].sum((-2, -1))
    hit = (w * pattern)[:, rows].sum((-2, -1))
    return np.divide(hit, mass, out=np.zeros_like(mass), where=mass > 0)


def broadness(weights: np.ndarray, visible: np.ndarray) -> np.ndarray:
    """Mean over rows with ≥ 2 visible keys of entropy ÷ ln(visible keys): ``[head, q, k]`` → ``[head]``."""
    w = np.nan_to_num(np.asarray(weights, np.float64))
    k = np.asarray(visible, bool).sum(-1)  # [q]
    rows = k >= 2
    if not rows.any():
        return np.zeros(w.shape[0])
    logs = np.log(np.where(w > 0, w, 1.0))
    entropy = -(w * logs).sum(-1)  # [head, q]
    return (entropy[:, rows] / np.log(k[rows])).mean(-1)


def head_type_scores(weights: np.ndarray, tokens, visible: np.ndarray | None = None,
                     kinds: tuple[str, ...] = ENCODER_SCORES) -> dict[str, np.ndarray]:
    """Each score of ``kinds`` per head for one sentence's real positions: ``weights [head, n, n]`` (already cut
    to the n real tokens), ``tokens`` (n strings), ``visible`` bool ``[n, n]`` (default all) → ``{kind: [head]}``.

    Raises:
        ValueError: an unknown kind, or tokens that do not match the weights.
    """
    w = np.asarray(weights, np.float64)
    n = w.shape[-1]
    if len(tokens) != n or w.shape[-2] != n:
        raise ValueError(f"{len(tokens)} tokens for weights of shape {w.shape}")
    visible = np.ones((n, n), bool) if visible is None else np.asarray(visible, bool)
    out = {}
    for kind in kinds:
        if kind in ("previous_token", "next_token", "self", "duplicate_token", "induction"):
            out[kind] = detection_score(w, detection_pattern(kind, tokens))
        elif kind == "broadness":
            out[kind] = broadness(w, visible)
        elif kind == "cls_share":
            out[kind] = row_stats(w, tokens, n)["cls_share"].mean(-1) if n else np.zeros(w.shape[0])
        elif kind == "sep_punct_share":
            keys = special_positions(tokens, n)["[SEP]"] | np.array([is_punctuation(t) for t in tokens], bool)
            out[kind] = w[..., keys].sum(-1).mean(-1) if n else np.zeros(w.shape[0])
        else:
            raise ValueError(f"unknown head score {kind!r}; choose one of {', '.join(SCORES)}")
    return out


def head_types(trace: Trace, batch: int = 0, kinds: tuple[str, ...] = ENCODER_SCORES) -> pd.DataFrame:
    """One row per layer × head (layer-major): ``layer``, ``head`` and each score of ``kinds`` for sentence
    ``batch`` of ``trace`` (its ``weights`` stages, real positions only)."""
    n = trace.lengths[batch]
    tokens = trace.tokens[batch][:n]
    visible = trace.visible(batch)[:n, :n]
    records = []
    for layer in range(trace.n_layers):
        scores = head_type_scores(trace.stage("weights", layer)[batch, :, :n, :n], tokens, visible, kinds)
        for head in range(len(next(iter(scores.values())))):
            records.append({"layer": layer, "head": head, **{k: float(v[head]) for k, v in scores.items()}})
    return pd.DataFrame.from_records(records, columns=["layer", "head", *kinds])
