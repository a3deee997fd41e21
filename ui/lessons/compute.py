"""The lesson pages' cached compute: :func:`~ui.shell.cache.memo` (one byte budget, keyed by value, arrays read-only)
around :mod:`transformer_core.analysis.lessons` and :func:`~transformer_core.models.toy.run_toy`; NumPy arrays and plain
values out."""
from __future__ import annotations

import numpy as np
import torch

from transformer_core import EncoderConfig, run_toy
from transformer_core.analysis import lessons
from transformer_core.nn import masks
from transformer_core.nn.attention import masked_softmax
from transformer_core.text.tokenize import TokenBatch, batch_tokens
from transformer_core.models.toy import build_mask
from transformer_core.records.trace import Trace

from ..shell.cache import memo
from ..shell.controls import Settings
from ..shell.i18n import _, language
from .lesson_figures import LESSON_TOKENS, lab_sentences


def config(settings: Settings, n_heads: int | None = None, dropout: float = 0.0) -> EncoderConfig:
    """The toy encoder's config for these settings (the explorer's model)."""
    return EncoderConfig(d_model=settings.d_model, n_heads=n_heads or settings.n_heads, d_ff=4 * settings.d_model,
                         dropout=dropout, seed=settings.seed)


# ---------------------------------------------------------------------------------------- masks lab
@memo("lesson")
def lab_trace(settings: Settings) -> Trace:
    """The toy encoder on the lab's two sentences, captured with no mask (raw scores, q, k, v, embeddings)."""
    pair, _added = lab_sentences(settings)
    return run_toy(list(pair), config(settings), tokenizer=settings.tokenizer, causal=False, padding=False,
                   max_tokens=LESSON_TOKENS)


def _lab_inputs(settings: Settings, batch: int, head: int):
    trace = lab_trace(settings)
    n = len(trace.tokens[batch])
    scores = torch.from_numpy(trace.stage("scores")[batch, head].copy())  # [query_pos, key_pos]
    keys = masks.padding_mask(trace.lengths, n)[batch, 0, 0]  # [key_pos], True = real token
    return trace, n, scores, keys


@memo("lesson")
def mask_gallery(settings: Settings, batch: int, head: int) -> dict:
    """Causal, padding and both: ``{kind: {"mask", "masked", "weights"}}`` for one sentence and head."""
    trace, n, scores, keys = _lab_inputs(settings, batch, head)
    causal = masks.causal_mask(n)
    padding = keys[None, :].expand(n, n)
    out = {}
    for kind, mask in (("causal", causal), ("padding", padding), ("both", masks.combine(causal, padding))):
        masked, weights = lessons.masked_stages(scores, mask)
        out[kind] = {"mask": mask.numpy().copy(), "masked": masked.numpy(), "weights": weights.numpy()}
    return out


def _max_abs(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max()) if a.size else 0.0


def conventions(settings: Settings, batch: int, head: int, empty_row: int) -> dict:
    """Seed 000 vs seed 001 vs ours on causal + padding with query row ``empty_row`` fully blocked; float16 too
    (its texts in the session's language: the language is part of the cache key)."""
    return _conventions(settings, batch, head, empty_row, language())


@memo("lesson")
def _conventions(settings: Settings, batch: int, head: int, empty_row: int, lang: str) -> dict:
    from transformer_core.text.i18n import use_language

    with use_language(lang):
        return _conventions_in(settings, batch, head, empty_row)


def _conventions_in(settings: Settings, batch: int, head: int, empty_row: int) -> dict:
    trace, n, scores, keys = _lab_inputs(settings, batch, head)
    mask = masks.combine(masks.causal_mask(n), keys[None, :].expand(n, n)).clone()
    mask[empty_row] = False
    recipes = lessons.seed_conventions(scores, mask)
    ordinary = mask.any(-1).numpy()
    weights = {name: w.numpy() for name, (_m, w) in recipes.items()}
    masked = {name: m.numpy() for name, (m, _w) in recipes.items()}
    diffs = {pair: _max_abs(weights[pair[0]][ordinary], weights[pair[1]][ordinary])
             for pair in (("seed 000", "seed 001"), ("seed 000", "ours"), ("seed 001", "ours"))}
    # float16: fill values tried live on the same scores
    half = {}
    reference = weights["ours"][ordinary]
    for label_, fill in (("-1e9", lessons.SEED_001_FILL), ("float('-inf')", lessons.NEG_INF),
                         ("torch.finfo(torch.float16).min", float(torch.finfo(torch.float16).min))):
        m16, error = lessons.fill_in_dtype(scores, mask, fill, torch.float16)
        if error is None:
            w16 = masked_softmax(m16, mask).numpy()
            half[label_] = _("ok, {dtype}; the weights differ from float32 by at most {diff} (float16 rounding)").format(
                dtype=str(m16.dtype).removeprefix("torch."), diff=f"{_max_abs(w16[ordinary], reference):.1e}")
        else:
            half[label_] = error
    module_ok, module_text = lessons.half_module_runs(settings.d_model, settings.n_heads, n, seed=settings.seed)
    return {"mask": mask.numpy(), "ordinary": ordinary, "weights": weights, "masked": masked, "diffs": diffs,
            "half": half, "facts": lessons.float16_facts(), "module": (module_ok, module_text)}


@memo("lesson")
def prefix(settings: Settings, batch: int, head: int, n_new: int) -> dict:
    """The last ``n_new`` real tokens as new queries against the whole sentence (a cached prefix)."""
    trace = lab_trace(settings)
    length = trace.lengths[batch]
    qkv = [torch.from_numpy(trace.stage(s)[batch:batch + 1, head:head + 1, :length].copy()) for s in ("q", "k", "v")]
    res = lessons.cached_prefix(*qkv, n_new)
    square = bool(torch.equal(lessons.torch_is_causal_mask(length, length), masks.causal_mask(length)))
    return {"masks": {k: v.numpy() for k, v in res["masks"].items()}, "full": masks.causal_mask(length).numpy(),
            "weights": {k: v[0, 0].numpy() for k, v in res["weights"].items()},
            "reference": res["reference"][0, 0].numpy(), "max_diff": res["max_diff"], "square_equal": square}


@memo("lesson")
def keys_vs_queries(settings: Settings, batch: int, head: int) -> dict:
    """Padding hidden on key columns, on query rows, or both: masks, weights (ours, seed 000) and measures."""
    trace, n, scores, keys = _lab_inputs(settings, batch, head)
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
            "real_rows_diff": _max_abs(ours[real], reference[real]),
            "nan_rows": int(np.isnan(seed000).any(-1).sum()),
        }
    return out


@memo("lesson")
def dropout_lab(settings: Settings, batch: int, head: int, training: bool, p: float, dropout_seed: int) -> dict:
    """Weights before and after attention dropout for the sidebar's mask; row sums of both."""
    trace = lab_trace(settings)
    x = torch.from_numpy(trace.stages["embeddings"].copy())  # [batch, pos, d_model]
    mask = build_mask(TokenBatch(trace.tokens, trace.lengths, trace.truncated), settings.causal, settings.padding)
    stages = lessons.attention_dropout(x, mask, config(settings, dropout=p), training=training,
                                       dropout_seed=dropout_seed)
    before = stages["weights"][batch, head].numpy()
    after = stages["dropped_weights"][batch, head].numpy()
    visible = np.ones(before.shape, bool) if mask is None else mask[batch, 0].numpy().copy()  # [query, key]
    return {"before": before, "after": after, "visible": visible,
            "sum_before": before.sum(-1), "sum_after": after.sum(-1),
            "zeroed": int(((after == 0) & (before > 0)).sum()), "kept": int((before > 0).sum())}


# ---------------------------------------------------------------------------------------- pipeline
@memo("lesson")
def walkthrough(settings: Settings, batch: int, n_heads: int, causal: bool) -> dict:
    """One sentence through the toy encoder's first layer, every step (see ``lessons.encoder_walkthrough``)."""
    tb = batch_tokens([settings.sentences[batch]], settings.tokenizer, LESSON_TOKENS)
    tokens = tb.tokens[0]
    steps = lessons.encoder_walkthrough(tokens, config(settings, n_heads=n_heads), causal)
    return {"tokens": tokens, "truncated": tb.truncated[0], "steps": steps,
            "conv_diff": _max_abs(steps["ff_linear"], steps["ff_conv1d"]),
            "dropout_diff": _max_abs(steps["dropped"], steps["projected"]),
            "relu_zero": float((steps["ff_hidden"] == 0).mean())}


@memo("lesson")
def comparison(settings: Settings, batch: int, a: tuple[int, bool], b: tuple[int, bool]) -> dict:
    """Two settings ``(n_heads, causal)`` on one sentence: B − A for the attention output and the
    head-averaged weights (cells blocked under both settings are hidden)."""
    sa, sb = (walkthrough(settings, batch, *s)["steps"] for s in (a, b))
    return {"output_diff": sb["attn_output"][0] - sa["attn_output"][0],
            "mean_weights_diff": sb["weights"][0].mean(0) - sa["weights"][0].mean(0),
            "visible": sa["mask"] | sb["mask"],
            "max_output_diff": _max_abs(sb["attn_output"], sa["attn_output"])}


@memo("lesson")
def parameter_counts(d_model: int, head_counts: tuple[int, ...]) -> dict[int, int]:
    """Parameters of ``MultiHeadAttention(d_model, h)`` for every ``h``, counted on built modules."""
    return lessons.attention_parameter_counts(d_model, list(head_counts))
