"""Explain one number: the arithmetic behind one cell of one head, recomputed from a trace's captures.

For query position ``i`` and key position ``j`` of one head (Vaswani et al. 2017, Eq. 1):

1. **score**   ``s_ij = (q_i · k_j) / √d_k`` — the elementwise products ``q_i[d] k_j[d]``, their sum, the scale;
2. **mask**    ``s̃_ij = s_ij`` if the mask lets query ``i`` see key ``j`` (True = may attend), else ``−∞``
   (the causal mask blocks a key after the query; the padding mask blocks a ``[PAD]`` key);
3. **softmax** ``w_ij = exp(s̃_ij − m_i) / Σ_j' exp(s̃_ij' − m_i)`` with ``m_i`` the row's largest visible score
   (subtracting it changes nothing mathematically and keeps every ``exp`` ≤ 1, so nothing overflows);
   a row with no visible key has weights of exactly 0 (this package's convention);
4. **context** ``c_i = Σ_j w_ij v_j`` — each key's contribution ``w_ij v_j``.

Every number here comes from the captured ``q``, ``k``, ``v`` (recomputed in float64) and is
compared with the captured ``scores``, ``weights`` and ``context``; :attr:`CellExplanation.max_diff`
is the largest difference, which the app shows (it must stay ≤ 1e-5).

Shape legend: d_head (= d_k), key_pos.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..text.i18n import _
from ..text.tokenize import PAD
from ..records.trace import Trace

TOLERANCE = 1e-5  # largest allowed |recomputed − captured|


@dataclass(frozen=True)
class CellExplanation:
    """The arithmetic of cell ``(query, key)`` of one head; arrays are float64.

    Attributes:
        q, k: ``[d_head]`` query and key vectors; ``products`` = ``q * k`` ``[d_head]``; ``dot`` = its sum.
        d_k, scale: head width and ``√d_k``; ``score`` = ``dot / scale`` (recomputed), ``captured_score``.
        visible: whether the mask lets the query see the key; ``why``: one sentence saying why.
        row_visible: bool ``[key_pos]``; ``row_scores``: recomputed scores of the row ``[key_pos]``.
        row_max: largest visible score (NaN if none); ``exps``: ``exp(score − row_max)`` of visible
            keys, 0 elsewhere ``[key_pos]``; ``exp_sum``: their sum; ``row_weights``: recomputed ``[key_pos]``.
        weight, captured_weight: recomputed and captured ``w_ij``.
        contributions: ``w_ij v_j`` per key ``[key_pos, d_head]``; ``context``: their sum ``[d_head]``;
            ``captured_context``: the captured row ``[d_head]``.
        max_diff: largest |recomputed − captured| over score row, weight row and context.
    """

    query: int
    key: int
    q: np.ndarray
    k: np.ndarray
    products: np.ndarray
    dot: float
    d_k: int
    scale: float
    score: float
    captured_score: float
    visible: bool
    why: str
    row_visible: np.ndarray
    row_scores: np.ndarray
    row_max: float
    exps: np.ndarray
    exp_sum: float
    row_weights: np.ndarray
    weight: float
    captured_weight: float
    contributions: np.ndarray
    context: np.ndarray
    captured_context: np.ndarray
    max_diff: float

    @property
    def empty_row(self) -> bool:
        """True when the query sees no key at all (its weights and context are 0)."""
        return not self.row_visible.any()


def blocked_reason(trace: Trace, batch: int, query: int, key: int) -> str:
    """Why the mask blocks (or not) query ``query`` from key ``key``, in one sentence."""
    visible = bool(trace.visible(batch)[query, key])
    causal = bool(trace.settings.get("causal"))
    is_pad = key >= trace.lengths[batch] and trace.tokens[batch][key] == PAD
    if visible:
        return _("visible: no active mask blocks this key")
    reasons = []
    if causal and key > query:
        reasons.append(_("causal mask: key {key} comes after query {query}").format(key=key, query=query))
    if is_pad:
        reasons.append(_("padding mask: key {key} is [PAD]").format(key=key))
    return _("blocked — ") + ("; ".join(reasons) if reasons else _("the mask says False here"))


def explain_cell(trace: Trace, *, batch: int, layer: int = 0, head: int, query: int, key: int) -> CellExplanation:
    """Recompute cell ``(query, key)`` of one head from the trace's captured q, k, v.

    Raises:
        KeyError: the trace lacks ``q``, ``k``, ``v``, ``scores``, ``weights`` or ``context`` of ``layer``.
        IndexError: ``batch``, ``head``, ``query`` or ``key`` out of range.
    """
    n = len(trace.tokens[batch])
    if not (0 <= query < n and 0 <= key < n):
        raise IndexError(f"query {query} / key {key} outside 0…{n - 1}")
    q = trace.stage("q", layer)[batch, head].astype(np.float64)  # [pos, d_head]
    k = trace.stage("k", layer)[batch, head].astype(np.float64)
    v = trace.stage("v", layer)[batch, head].astype(np.float64)
    d_k = q.shape[-1]
    scale = float(np.sqrt(d_k))
    row_scores = k @ q[query] / scale  # [key_pos]
    row_visible = np.asarray(trace.visible(batch)[query], bool)
    if row_visible.any():
        row_max = float(row_scores[row_visible].max())
        exps = np.where(row_visible, np.exp(np.where(row_visible, row_scores - row_max, 0.0)), 0.0)
        exp_sum = float(exps.sum())
        row_weights = exps / exp_sum
    else:  # no visible key: weights exactly 0, context 0
        row_max, exps, exp_sum, row_weights = float("nan"), np.zeros(n), 0.0, np.zeros(n)
    contributions = row_weights[:, None] * v  # [key_pos, d_head]
    context = contributions.sum(axis=0)
    captured_scores = trace.stage("scores", layer)[batch, head, query].astype(np.float64)
    captured_weights = trace.stage("weights", layer)[batch, head, query].astype(np.float64)
    captured_context = trace.stage("context", layer)[batch, head, query].astype(np.float64)
    max_diff = float(max(np.abs(row_scores - captured_scores).max(), np.abs(row_weights - captured_weights).max(),
                         np.abs(context - captured_context).max()))
    products = q[query] * k[key]
    return CellExplanation(
        query=query, key=key, q=q[query], k=k[key], products=products, dot=float(products.sum()), d_k=d_k,
        scale=scale, score=float(row_scores[key]), captured_score=float(captured_scores[key]),
        visible=bool(row_visible[key]), why=blocked_reason(trace, batch, query, key), row_visible=row_visible,
        row_scores=row_scores, row_max=row_max, exps=exps, exp_sum=exp_sum, row_weights=row_weights,
        weight=float(row_weights[key]), captured_weight=float(captured_weights[key]), contributions=contributions,
        context=context, captured_context=captured_context, max_diff=max_diff)


@dataclass(frozen=True)
class PositionExplanation:
    """One position's path from the heads' contexts to the attention block's output (post-LN).

    ``concat = [head_0 | … | head_{h−1}]`` (each ``[d_k]``), ``projected = concat W_Oᵀ + b_O``,
    ``residual = x + projected`` (dropout is the identity at inference), and
    ``output = γ ⊙ (residual − μ) / √(σ² + ε) + β`` with μ, σ² the mean and (biased) variance of
    ``residual`` over its ``d_model`` numbers (Ba et al. 2016; Vaswani et al. 2017 §3.1). All ``[d_model]``
    float64, recomputed from the walkthrough's tensors; ``max_diff`` against the captured
    ``concat``, ``projected``, ``attn_residual`` and ``attn_output``.
    """

    pos: int
    n_heads: int
    d_k: int
    concat: np.ndarray
    projected: np.ndarray
    x: np.ndarray
    residual: np.ndarray
    mean: float
    var: float
    eps: float
    normalized: np.ndarray
    output: np.ndarray
    max_diff: float


def explain_position(steps: dict[str, np.ndarray], pos: int) -> PositionExplanation:
    """Recompute position ``pos`` of :func:`~transformer_core.analysis.lessons.encoder_walkthrough`'s steps.

    Raises:
        IndexError: ``pos`` outside the sentence. KeyError: a step is missing.
    """
    n = steps["x"].shape[1]
    if not 0 <= pos < n:
        raise IndexError(f"position {pos} outside 0…{n - 1}")
    context = steps["context"][0, :, pos].astype(np.float64)  # [head, d_k]
    n_heads, d_k = context.shape
    concat = context.reshape(-1)  # [d_model]: head 0's d_k numbers, then head 1's, …
    projected = steps["W_O"].astype(np.float64) @ concat + steps["b_O"]
    x = steps["x"][0, pos].astype(np.float64)
    residual = x + projected
    mean, var, eps = float(residual.mean()), float(residual.var()), float(steps["ln_eps"])
    normalized = (residual - mean) / np.sqrt(var + eps)
    output = steps["ln_gamma"] * normalized + steps["ln_beta"]
    diffs = [np.abs(concat - steps["concat"][0, pos]).max(), np.abs(projected - steps["projected"][0, pos]).max(),
             np.abs(residual - steps["attn_residual"][0, pos]).max(), np.abs(output - steps["attn_output"][0, pos]).max()]
    return PositionExplanation(pos=pos, n_heads=n_heads, d_k=d_k, concat=concat, projected=projected, x=x,
                               residual=residual, mean=mean, var=var, eps=eps, normalized=normalized, output=output,
                               max_diff=float(max(diffs)))
