"""Head types: one score per head saying how much it behaves like a known kind of head.

Pattern scores are TransformerLens's ``head_detector`` (``detect_head``, error measure ``"mul"``, the
default): with a detection pattern D (1 where a head of that type attends) and a head's weights
A ``[query_pos, key_pos]``, "multiply both element-wise and divide the sum of the result by the sum of
the attention pattern":

    score = Σ_ij A_ij D_ij / Σ_ij A_ij,   over every query row i

(with rows that sum to 1, the denominator is the number of query positions). ``exclude_bos`` zeroes
A's column 0 and ``exclude_current_token`` its diagonal before both sums, as there. A perfect
previous-token head scores (n − 1)/n: row 0 has no previous token. That is :data:`DEFINITIONS`
``"transformer_lens"``, the default. This project's earlier variant stays as ``"rows_with_target"``:
the same sums over only the rows that have a target (Σ_j D_ij > 0), so a perfect previous-token head
scores 1 and equals :func:`transformer_core.models.causal.previous_token_score` on full rows.

Detection patterns (TransformerLens ``get_*_detection_pattern``, lower-triangular there; our MiniLM
also looks ahead, so ``next_token`` is ours):

* ``previous_token``: D_ij = [j = i − 1];
* ``next_token``: D_ij = [j = i + 1];
* ``self``: D_ij = [j = i];
* ``duplicate_token``: D_ij = [j < i and token_j = token_i] (an earlier copy of the current token);
* ``induction``: D_ij = [1 ≤ j ≤ i and token_{j−1} = token_i] (the token after an earlier copy: the
  token-matching pattern, on any sequence; the causal model's period-diagonal score
  :func:`transformer_core.models.causal.induction_score` is a different, named definition).

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
PATTERN_SCORES = ("previous_token", "next_token", "self", "duplicate_token", "induction")
DEFINITIONS = {  # how a pattern score is reduced → one line on what it is (English)
    "transformer_lens": N_("TransformerLens head_detector (“mul”): Σ A·D ÷ Σ A over every query row"),
    "rows_with_target": N_("Σ A·D ÷ Σ A over only the query rows that have a target (a perfect head scores 1)"),
}
SOURCES = {  # score → which detector or statistic produced it (English, marked for the catalog)
    **{k: DEFINITIONS["transformer_lens"] for k in PATTERN_SCORES},
    "cls_share": N_("mean over real queries of the weight on [CLS]"),
    "sep_punct_share": N_("mean over real queries of the weight on [SEP] and punctuation"),
    "broadness": N_("mean row entropy ÷ ln(visible keys)"),
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


def detection_score(weights: np.ndarray, pattern: np.ndarray, *, definition: str = "transformer_lens",
                    exclude_bos: bool = False, exclude_current_token: bool = False) -> np.ndarray:
    """Σ A·D / Σ A per head: ``weights [head, q, k]``, ``pattern [q, k]`` → ``[head]``.

    ``definition`` (:data:`DEFINITIONS`): ``"transformer_lens"`` sums over every query row (TransformerLens's
    ``detect_head``, "mul"); ``"rows_with_target"`` over the rows where D has a target. ``exclude_bos`` /
    ``exclude_current_token`` zero A's column 0 / diagonal first, as TransformerLens does. 0 where the summed
    rows hold no weight.

    Raises:
        ValueError: unknown definition.
    """
    if definition not in DEFINITIONS:
        raise ValueError(f"unknown definition {definition!r}; choose one of {', '.join(DEFINITIONS)}")
    w = np.array(np.nan_to_num(np.asarray(weights, np.float64)))  # a copy: the exclusions write into it
    pattern = np.asarray(pattern, bool)
    if exclude_bos and w.shape[-1]:
        w[..., 0] = 0.0
    if exclude_current_token:
        idx = np.arange(min(w.shape[-2:]))
        w[..., idx, idx] = 0.0
    rows = pattern.any(-1) if definition == "rows_with_target" else np.ones(pattern.shape[0], bool)
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
                     kinds: tuple[str, ...] = ENCODER_SCORES, *,
                     definition: str = "transformer_lens") -> dict[str, np.ndarray]:
    """Each score of ``kinds`` per head for one sentence's real positions: ``weights [head, n, n]`` (already cut
    to the n real tokens), ``tokens`` (n strings), ``visible`` bool ``[n, n]`` (default all) → ``{kind: [head]}``.
    Pattern scores follow ``definition`` (:data:`DEFINITIONS`).

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
        if kind in PATTERN_SCORES:
            out[kind] = detection_score(w, detection_pattern(kind, tokens), definition=definition)
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


def head_types(trace: Trace, batch: int = 0, kinds: tuple[str, ...] = ENCODER_SCORES, *,
               definition: str = "transformer_lens") -> pd.DataFrame:
    """One row per layer × head (layer-major): ``layer``, ``head`` and each score of ``kinds`` for sentence
    ``batch`` of ``trace`` (its ``weights`` stages, real positions only; pattern scores by ``definition``)."""
    n = trace.lengths[batch]
    tokens = trace.tokens[batch][:n]
    visible = trace.visible(batch)[:n, :n]
    records = []
    for layer in range(trace.n_layers):
        scores = head_type_scores(trace.stage("weights", layer)[batch, :, :n, :n], tokens, visible, kinds,
                                  definition=definition)
        for head in range(len(next(iter(scores.values())))):
            records.append({"layer": layer, "head": head, **{k: float(v[head]) for k, v in scores.items()}})
    return pd.DataFrame.from_records(records, columns=["layer", "head", *kinds])
