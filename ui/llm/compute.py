"""Cached compute of the SmolLM2 page: (prompt, choices) in, small summaries and one layer's trace out.

SmolLM2 is loaded once per process (:func:`~transformer_core.models.smollm2.load_smollm2`) and shared read-only;
:func:`~transformer_core.nn.hooks.capture` and :func:`~transformer_core.nn.hooks.intervene` are private to each
thread. :func:`~ui.shell.cache.memo` keys by value (byte-bounded, expiring; a summary is ~10 MB at 128 tokens,
most of it the residual stream entering each block, and a layer ~3 MB). A missing model raises
:class:`~transformer_core.models.gguf_weights.SmolLM2Unavailable`, which is not cached (a later run retries).

Shape legend: layer (30), head (9), pos, vocab (49,152).
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from transformer_core.records.trace import Trace

from ..shell.cache import memo
from ..shell.i18n import _

MAX_LLM_TOKENS = 128  # the page's limit (memory: every stage of one layer at 128 tokens is ~3 MB)
SHOWN_STAGES = ("q", "k", "v", "k_kv", "v_kv", "scores", "masked_scores", "weights", "context")
N_LAYERS, N_HEADS, N_KV = 30, 9, 3
EXAMPLES = {  # the prompt box's default, by the page's language
    "en": "When Mary and John went to the store, John gave a drink to",
    # SmolLM2 learned mostly English and most Chinese characters cost it two or three byte pieces: this pattern it
    # continues with a whole character (人, p ≈ 0.98), so a Chinese class first sees the model get one right
    "zh": "中国人，美国人，日本",
}


def model():
    """``(model, tokenizer)``; raises SmolLM2Unavailable (read through the module, so a test can replace it)."""
    from transformer_core.models import smollm2

    from ..shell.diagnostics import count_forwards

    net, tokenizer = smollm2.load_smollm2()
    count_forwards(net, "smollm2")
    return net, tokenizer


@memo("llm_summary")
def summary(prompt: str) -> dict:
    """What the page shows of every layer of ``prompt`` (cut to :data:`MAX_LLM_TOKENS` tokens), from one run: the
    weights are kept only long enough to reduce them, and the residual stream entering each block is kept, so that
    any layer's stages come from it (:func:`layer_trace`) without running the model again.

    ``{"trace": Trace with tokens and mask (no stages), "n_total": tokens before the cut, "ids", "stats": head
    statistics DataFrame (270 rows, with sink_share), "grids": {"sink_share", "max_weight", "entropy": [layer,
    head]}, "logits": float64 [vocab] after the last token, "top": [pos] top-5 lists at T = 1,
    "residuals": float32 [layer, pos, d_model]}`` (8.8 MB at 128 tokens).

    Raises:
        SmolLM2Unavailable: the model is not installed. ValueError: no token.
    """
    from transformer_core.analysis.ablation_smollm2 import head_stats_smollm2
    from transformer_core.models.smollm2_trace import run_smollm2

    model()
    with st.spinner(_("Running SmolLM2-135M …")):
        trace, prediction = run_smollm2(prompt, max_tokens=MAX_LLM_TOKENS, residuals=True,
                                        only=lambda n: n.endswith(".attention.weights"))
    stats = head_stats_smollm2(trace)
    grids = {name: stats[name].to_numpy().reshape(N_LAYERS, N_HEADS) for name in ("sink_share", "max_weight",
                                                                                    "entropy")}
    return {"trace": Trace(tokens=trace.tokens, lengths=trace.lengths, truncated=trace.truncated, mask=trace.mask,
                           stages={}, settings=trace.settings),
            "n_total": prediction["n_total"], "ids": tuple(trace.settings["ids"]), "stats": stats, "grids": grids,
            "logits": prediction["last_logits"], "top": prediction["top"], "residuals": prediction["residuals"]}


@memo("llm_layer")
def layer_trace(prompt: str, layer: int) -> Trace:
    """SmolLM2's trace of ``prompt`` holding the stages the head view draws, of one ``layer`` only: that block
    recomputed from the residual stream :func:`summary` kept (no run of the model; equal to capturing it in a whole
    run, tests/test_llm_cache.py)."""
    from transformer_core.models.smollm2_trace import block_stages

    whole = summary(prompt)
    prefix = f"layers.{layer}.attention."
    stages = block_stages(whole["residuals"][layer], layer,
                          only=lambda n: n.startswith(prefix) and n[len(prefix):] in SHOWN_STAGES)
    base = whole["trace"]
    return Trace(tokens=base.tokens, lengths=base.lengths, truncated=base.truncated, mask=base.mask, stages=stages,
                 settings=base.settings)


def generation_steps(ids: tuple[int, ...], n_new: int, greedy: bool, temperature: float, k: int | None,
                     p: float | None, seed: int):
    """:func:`~transformer_core.analysis.smollm2_generate.stream` with the KV cache after the prompt's ``ids`` (as
    :func:`summary` encoded and cut them): each step's dict as soon as its token is chosen."""
    from transformer_core.analysis.smollm2_generate import stream

    model()
    return stream(list(ids), n_new, greedy=greedy, temperature=temperature, k=k, p=p, seed=seed)


def ioi_intact() -> dict:
    """The intact model's next word after the IOI prompt, from its cached :func:`summary` (no extra forward pass):
    ``{"targets": {" Mary": p, " John": p}, "top": [(label, id, p)] × 5}`` at T = 1, as
    :func:`~transformer_core.analysis.ablation_smollm2.ablation_effect` gives ``"intact"``."""
    from transformer_core.analysis.ablation_smollm2 import IOI_PROMPT, TARGETS, target_ids
    from transformer_core.analysis.predictions import softmax_t

    _net, tokenizer = model()
    probs = softmax_t(summary(IOI_PROMPT)["logits"], 1.0)  # [vocab] float64
    best = np.argsort(-probs, kind="stable")[:5]
    return {"targets": {t: float(probs[i]) for t, i in zip(TARGETS, target_ids(TARGETS, tokenizer))},
            "top": [(token_label(int(i)), int(i), float(probs[i])) for i in best]}


@memo("llm_summary")
def effect(heads: tuple, mode: str, reference: str) -> dict:
    """:func:`~transformer_core.analysis.ablation_smollm2.ablation_effect` on the IOI prompt."""
    from transformer_core.analysis.ablation_smollm2 import ablation_effect

    model()
    return ablation_effect(heads=heads, mode=mode, reference=reference)


@memo("fixed", key=lambda mode, reference, progress=None: (mode, reference))
def ranked(mode: str, reference: str, progress=None) -> dict:
    """:func:`~transformer_core.analysis.ablation_smollm2.rank_heads` on the IOI prompt (30 batched passes, each from
    the ablated layer on; ~9 s of one core). The prompt is fixed, so a ranking is kept an hour for everyone."""
    from transformer_core.analysis.ablation_smollm2 import rank_heads

    model()
    return rank_heads(mode=mode, reference=reference, progress=progress)


@memo("fixed")
def ioi_last_rows() -> dict:
    """The IOI prompt's readable tokens and the last position's attention weights in every head:
    ``{"tokens", "rows": [layer, head, key_pos]}``."""
    from transformer_core.analysis.ablation_smollm2 import IOI_PROMPT
    from transformer_core.models.smollm2_trace import run_smollm2

    model()
    trace, _prediction = run_smollm2(IOI_PROMPT, only=lambda n: n.endswith(".attention.weights"))
    rows = np.stack([trace.stage("weights", layer)[0, :, -1, :] for layer in range(trace.n_layers)])
    return {"tokens": list(trace.tokens[0]), "rows": rows.astype(np.float32)}


def token_label(tokenizer_id: int) -> str:
    """A readable label of one vocabulary id (``␣Mary``; a byte piece ``<0xE4><0xBB> (part of a character)``)."""
    from transformer_core.models.smollm2_trace import encode_labels

    _net, tokenizer = model()
    return readable(encode_labels([tokenizer.id_to_token(int(tokenizer_id))])[0])


def readable(label: str) -> str:
    """``label`` of one token, saying in the page's language when it holds bytes of a character that the token
    alone does not complete (byte fallback: ``<0xE4><0xBB>`` → ``<0xE4><0xBB> (part of a character)``)."""
    return _("{piece} (part of a character)").format(piece=label) if "<0x" in label else label
