"""What the masks lab and the multi-head pipeline show, measured on a captured toy-encoder trace: one head's raw
scores under causal, padding and both masks, and under a sliding window with sinks; the seeds' two fill conventions
and float16 on a fully blocked row; a cached prefix; padding hidden on keys, queries or both; attention dropout; and
the pipeline's step-by-step checks.

The experiments themselves are :mod:`transformer_core.analysis.lessons`'s; this module runs them on one sentence
and head of a :class:`~transformer_core.records.trace.Trace` (captured with no mask, so its ``scores`` are raw) and
returns NumPy arrays and plain numbers, the same on a page, the command line or in a notebook::

    from transformer_core import EncoderConfig, run_toy
    from transformer_core.analysis import masks_lab
    trace = run_toy(["the cat sat", "a dog"], EncoderConfig(d_model=64, n_heads=8), causal=False, padding=False)
    masks_lab.mask_gallery(trace, batch=1, head=0)["both"]["weights"]   # [query_pos, key_pos]

Mask convention: ``True`` = may attend. Shape legend: batch, head, query_pos, key_pos, pos, d_model.
"""
from __future__ import annotations

import numpy as np
import torch

from ..models.toy import build_mask
from ..nn import masks
from ..nn.attention import masked_softmax
from ..nn.config import EncoderConfig
from ..records.trace import Trace
from ..text.i18n import _
from ..text.tokenize import TokenBatch
from . import lessons

CONVENTION_PAIRS = (("seed 000", "seed 001"), ("seed 000", "ours"), ("seed 001", "ours"))


def max_abs(a: np.ndarray, b: np.ndarray) -> float:
    """Largest ``|a − b|``; 0.0 for empty arrays."""
    return float(np.abs(a - b).max()) if a.size else 0.0


def head_inputs(trace: Trace, batch: int, head: int) -> tuple[int, torch.Tensor, torch.Tensor]:
    """``(n, scores [query_pos, key_pos], keys [key_pos])`` of one sentence and head: the padded length, the raw
    scores (a copy: a cached trace's arrays are read-only) and which keys are real tokens (True) or [PAD]."""
    n = len(trace.tokens[batch])
    scores = torch.from_numpy(trace.stage("scores")[batch, head].copy())
    keys = masks.padding_mask(trace.lengths, n)[batch, 0, 0]
    return n, scores, keys


def mask_gallery(trace: Trace, batch: int, head: int) -> dict:
    """Causal, padding and both: ``{kind: {"mask", "masked", "weights"}}`` ``[query_pos, key_pos]`` each."""
    n, scores, keys = head_inputs(trace, batch, head)
    causal = masks.causal_mask(n)
    padding = keys[None, :].expand(n, n)
    out = {}
    for kind, mask in (("causal", causal), ("padding", padding), ("both", masks.combine(causal, padding))):
        masked, weights = lessons.masked_stages(scores, mask)
        out[kind] = {"mask": mask.numpy().copy(), "masked": masked.numpy(), "weights": weights.numpy()}
    return out


def window(trace: Trace, batch: int, head: int, width: int, sinks: int) -> dict:
    """A sliding window of ``width`` keys (the query's own included) plus ``sinks`` first tokens always kept
    (:func:`~transformer_core.nn.masks.sliding_window_mask`): ``{"mask", "masked", "weights" [query_pos, key_pos],
    "first", "first_no_sinks" [query_pos]}``, the last two each query's weight on the first key with these sinks
    and with none."""
    n, scores, _keys = head_inputs(trace, batch, head)
    mask = masks.sliding_window_mask(n, window=width, sinks=sinks)
    masked, weights = lessons.masked_stages(scores, mask)
    _m, bare = lessons.masked_stages(scores, masks.sliding_window_mask(n, window=width))
    return {"mask": mask.numpy().copy(), "masked": masked.numpy(), "weights": weights.numpy(),
            "first": weights[:, 0].numpy(), "first_no_sinks": bare[:, 0].numpy()}


def conventions(trace: Trace, batch: int, head: int, empty_row: int, d_model: int, n_heads: int, seed: int) -> dict:
    """Seed 000 vs seed 001 vs ours (:func:`~transformer_core.analysis.lessons.seed_conventions`) on causal +
    padding with query row ``empty_row`` fully blocked, and three float16 fill values tried on the same scores.

    ``{"mask", "ordinary" [query_pos] (rows with a key), "weights"/"masked": {recipe: [query_pos, key_pos]},
    "diffs": {(a, b): largest difference on ordinary rows}, "half": {fill: text}, "facts", "module": (ok, text)}``;
    ``module`` runs a float16 ``MultiHeadAttention(d_model, n_heads)`` seeded with ``seed``. Texts in the current
    language."""
    n, scores, keys = head_inputs(trace, batch, head)
    mask = masks.combine(masks.causal_mask(n), keys[None, :].expand(n, n)).clone()
    mask[empty_row] = False
    recipes = lessons.seed_conventions(scores, mask)
    ordinary = mask.any(-1).numpy()
    weights = {name: w.numpy() for name, (_m, w) in recipes.items()}
    masked = {name: m.numpy() for name, (m, _w) in recipes.items()}
    diffs = {pair: max_abs(weights[pair[0]][ordinary], weights[pair[1]][ordinary]) for pair in CONVENTION_PAIRS}
    half = {}
    reference = weights["ours"][ordinary]
    for label, fill in (("-1e9", lessons.SEED_001_FILL), ("float('-inf')", lessons.NEG_INF),
                        ("torch.finfo(torch.float16).min", float(torch.finfo(torch.float16).min))):
        m16, error = lessons.fill_in_dtype(scores, mask, fill, torch.float16)
        if error is None:
            w16 = masked_softmax(m16, mask).numpy()
            half[label] = _("ok, {dtype}; the weights differ from float32 by at most {diff} (float16 rounding)").format(
                dtype=str(m16.dtype).removeprefix("torch."), diff=f"{max_abs(w16[ordinary], reference):.1e}")
        else:
            half[label] = error
    module_ok, module_text = lessons.half_module_runs(d_model, n_heads, n, seed=seed)
    return {"mask": mask.numpy(), "ordinary": ordinary, "weights": weights, "masked": masked, "diffs": diffs,
            "half": half, "facts": lessons.float16_facts(), "module": (module_ok, module_text)}


def prefix(trace: Trace, batch: int, head: int, n_new: int) -> dict:
    """The sentence's last ``n_new`` real tokens as new queries against all its real tokens (a cached prefix,
    :func:`~transformer_core.analysis.lessons.cached_prefix`): ``{"masks", "full" (the square causal mask),
    "weights", "reference", "max_diff", "square_equal"}``."""
    length = trace.lengths[batch]
    qkv = [torch.from_numpy(trace.stage(s)[batch:batch + 1, head:head + 1, :length].copy()) for s in ("q", "k", "v")]
    res = lessons.cached_prefix(*qkv, n_new)
    square = bool(torch.equal(lessons.torch_is_causal_mask(length, length), masks.causal_mask(length)))
    return {"masks": {k: v.numpy() for k, v in res["masks"].items()}, "full": masks.causal_mask(length).numpy(),
            "weights": {k: v[0, 0].numpy() for k, v in res["weights"].items()},
            "reference": res["reference"][0, 0].numpy(), "max_diff": res["max_diff"], "square_equal": square}


def keys_vs_queries(trace: Trace, batch: int, head: int) -> dict:
    """Padding hidden on key columns, on query rows, or both: ``{variant: {"mask", "weights" (ours), "seed000",
    "pad_weight" (largest weight a real query puts on [PAD]), "empty_rows", "real_rows_diff" (real rows against
    the keys-only variant), "nan_rows" (seed 000's rows that hold NaN)}}``."""
    n, scores, keys = head_inputs(trace, batch, head)
    real = keys.numpy()
    variants = {"keys": keys[None, :].expand(n, n), "queries": keys[:, None].expand(n, n)}
    variants["keys and queries"] = variants["keys"] & variants["queries"]
    out, reference = {}, None
    for name, mask in variants.items():
        recipes = lessons.seed_conventions(scores, mask)
        ours, seed000 = recipes["ours"][1].numpy(), recipes["seed 000"][1].numpy()
        reference = ours if reference is None else reference
        out[name] = {
            "mask": mask.numpy().copy(), "weights": ours, "seed000": seed000,
            "pad_weight": float(ours[real][:, ~real].sum(-1).max()) if (~real).any() and real.any() else 0.0,
            "empty_rows": int((~mask.any(-1)).sum()),
            "real_rows_diff": max_abs(ours[real], reference[real]),
            "nan_rows": int(np.isnan(seed000).any(-1).sum()),
        }
    return out


def dropout(trace: Trace, batch: int, head: int, config: EncoderConfig, causal: bool, padding: bool, training: bool,
            dropout_seed: int) -> dict:
    """Weights of one head before and after attention dropout (probability ``config.dropout``, in training mode
    only), under the causal and/or padding mask, on the trace's embeddings: ``{"before", "after", "visible"
    [query_pos, key_pos], "sum_before", "sum_after" [query_pos], "zeroed", "kept"}`` (weights dropped to 0, and
    weights above 0 before)."""
    x = torch.from_numpy(trace.stages["embeddings"].copy())  # [batch, pos, d_model]
    mask = build_mask(TokenBatch(trace.tokens, trace.lengths, trace.truncated), causal, padding)
    stages = lessons.attention_dropout(x, mask, config, training=training, dropout_seed=dropout_seed)
    before = stages["weights"][batch, head].numpy()
    after = stages["dropped_weights"][batch, head].numpy()
    visible = np.ones(before.shape, bool) if mask is None else mask[batch, 0].numpy().copy()
    return {"before": before, "after": after, "visible": visible,
            "sum_before": before.sum(-1), "sum_after": after.sum(-1),
            "zeroed": int(((after == 0) & (before > 0)).sum()), "kept": int((before > 0).sum())}


def walkthrough_checks(steps: dict) -> dict:
    """The pipeline's checks on :func:`~transformer_core.analysis.lessons.encoder_walkthrough`'s steps: seed 001's
    ``Conv1d`` feed-forward against ours (``conv_diff``), dropout in eval mode against no dropout
    (``dropout_diff``), and the share of the feed-forward's hidden units that ReLU sets to 0 (``relu_zero``)."""
    return {"conv_diff": max_abs(steps["ff_linear"], steps["ff_conv1d"]),
            "dropout_diff": max_abs(steps["dropped"], steps["projected"]),
            "relu_zero": float((steps["ff_hidden"] == 0).mean())}


def compare_steps(a: dict, b: dict) -> dict:
    """Two walkthroughs of one sentence (settings A and B): B − A of the attention output ``[pos, d_model]`` and of
    the head-averaged weights ``[query_pos, key_pos]``, the cells visible under either setting, and the largest
    output difference."""
    return {"output_diff": b["attn_output"][0] - a["attn_output"][0],
            "mean_weights_diff": b["weights"][0].mean(0) - a["weights"][0].mean(0),
            "visible": a["mask"] | b["mask"],
            "max_output_diff": max_abs(b["attn_output"], a["attn_output"])}
