"""Cached compute of the real-LLM page: (model, prompt, choices) in, small summaries and one layer's trace out.

The model is one of the server's list (:mod:`ui.llm.catalog`: SmolLM2-135M, and the local checkpoints the operator
names), a :class:`~ui.llm.catalog.Choice` that every cached function takes first, so two models never share an
entry. Its weights are loaded once per process and shared read-only; :func:`~transformer_core.nn.hooks.capture` and
:func:`~transformer_core.nn.hooks.intervene` are private to each thread. :func:`~ui.shell.cache.memo` keys by value
(byte-bounded, expiring; a summary of SmolLM2 is ~10 MB at 128 tokens, most of it the residual stream entering each
block, and a layer ~3 MB). A missing SmolLM2 raises :class:`~transformer_core.models.gguf_weights.SmolLM2Unavailable`
and a checkpoint that cannot be read :class:`~transformer_core.models.checkpoint.CheckpointError`; neither is cached
(a later run retries).

Shape legend: layer, head, pos, vocab (SmolLM2: 30, 9, ≤ 128, 49,152).
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from transformer_core.analysis.token_choices import readable, short_label
from transformer_core.records.trace import Trace

from ..shell.cache import memo
from ..shell.i18n import _
from ..shell.markdown import plain
from .catalog import DEFAULT, Choice

MAX_LLM_TOKENS = 128  # the page's limit (memory: every stage of one layer at 128 tokens is ~3 MB on SmolLM2)
SHOWN_STAGES = ("q", "k", "v", "k_kv", "v_kv", "scores", "masked_scores", "weights", "context")
EXAMPLES = {  # the prompt box's default, by the page's language
    "en": "When Mary and John went to the store, John gave a drink to",
    # SmolLM2 learned mostly English and most Chinese characters cost it two or three byte pieces: this pattern it
    # continues with a whole character (人, p ≈ 0.98), so a Chinese class first sees the model get one right
    "zh": "中国人，美国人，日本",
}


def face(choice: Choice = DEFAULT):
    """The chosen model's face (:class:`~transformer_core.models.face.Decoder`), its weights loaded, its forward
    calls counted under diagnostics (``"smollm2"`` or ``"llm"``).

    Raises:
        SmolLM2Unavailable: SmolLM2 is chosen and not installed. CheckpointError: the operator's path holds no
            checkpoint we read (the message says what is supported). CheckpointTooLarge: its float32 weights do
            not fit in this replica's free memory (:func:`ui.shell.heavy.memory_limit`); nothing was read.
    """
    from transformer_core import models

    from ..shell import heavy
    from ..shell.diagnostics import count_forwards

    if choice.is_smollm2 or models.is_held(choice.source):
        decoder = models.load(choice.source)
    else:  # a checkpoint read now must fit beside what this replica holds, or the replica would be killed
        limit = heavy.memory_limit()
        room = None if limit is None else limit - heavy.resident_bytes() - heavy.HEADROOM
        decoder = models.load_local(choice.source, max_bytes=room)
    count_forwards(decoder.module, "smollm2" if choice.is_smollm2 else "llm")
    return decoder


def model(choice: Choice = DEFAULT):
    """``(module, tokenizer)`` of the chosen model (read through the registry, so a test can replace SmolLM2's
    loader); raises as :func:`face`."""
    net, tokenizer, _special = face(choice).parts()
    return net, tokenizer


def _checkpoint(choice: Choice):
    return None if choice.is_smollm2 else face(choice).checkpoint


@memo("llm_summaries")
def summary(choice: Choice, prompt: str) -> dict:
    """What the page shows of every layer of ``prompt`` (cut to :data:`MAX_LLM_TOKENS` tokens), from one run of the
    chosen model: the weights are kept only long enough to reduce them, and the residual stream entering each block
    is kept, so that any layer's stages come from it (:func:`layer_trace`) without running the model again.

    ``{"trace": Trace with tokens and mask (no stages), "n_total": tokens before the cut, "ids", "config": the
    model's :class:`~transformer_core.models.face.ModelConfig`, "stats": head statistics DataFrame (layer × head
    rows, with sink_share), "grids": {"sink_share", "max_weight", "entropy": [layer, head]}, "logits": float64
    [vocab] after the last token, "top": [pos] top-5 lists at T = 1, "stream": float32 [layer + 1, pos, d_model]
    (the residual stream entering each block, then the final one: 9 MB for SmolLM2 at 128 tokens), "parts": what
    the last position's stream is the sum of (direct logit attribution)}``.

    Raises:
        SmolLM2Unavailable, CheckpointError: as :func:`face`. ValueError: no token, or the model's logits or residual
            stream are not finite (damaged weights).
    """
    from transformer_core.analysis.head_stats import decoder_head_stats
    from transformer_core.models.smollm2_trace import run_smollm2

    decoder = face(choice)
    with st.spinner(_("Running {model} …").format(model=plain(choice.label))):
        trace, prediction = run_smollm2(prompt, max_tokens=MAX_LLM_TOKENS, residuals=True,
                                        only=lambda n: n.endswith(".attention.weights"),
                                        checkpoint=_checkpoint(choice))
    if not (np.isfinite(prediction["last_logits"]).all() and np.isfinite(prediction["stream"]).all()):
        # damaged weights (a NaN or an overflow in a checkpoint) would reach the bars, tables and figures as NaN
        raise ValueError(_("the model “{model}” computes numbers that are not finite (not a number, or infinite) on "
                           "this prompt, so its weights may be damaged; pick another model above, or ask the "
                           "server's operator").format(model=choice.label))
    config = decoder.config
    stats = decoder_head_stats(trace)
    grids = {name: stats[name].to_numpy().reshape(config.n_layers, config.n_heads)
             for name in ("sink_share", "max_weight", "entropy")}
    return {"trace": Trace(tokens=trace.tokens, lengths=trace.lengths, truncated=trace.truncated, mask=trace.mask,
                           stages={}, settings=trace.settings),
            "n_total": prediction["n_total"], "ids": tuple(trace.settings["ids"]), "config": config, "stats": stats,
            "grids": grids, "logits": prediction["last_logits"], "top": prediction["top"],
            "stream": prediction["stream"], "parts": prediction["parts"]}


@memo("llm_layers")
def layer_trace(choice: Choice, prompt: str, layer: int) -> Trace:
    """The chosen model's trace of ``prompt`` holding the stages the head view draws, of one ``layer`` only: that
    block recomputed from the residual stream :func:`summary` kept (no run of the model; equal to capturing it in a
    whole run, tests/test_llm_cache.py)."""
    from transformer_core.models.smollm2_trace import block_stages

    whole = summary(choice, prompt)
    prefix = f"layers.{layer}.attention."
    stages = block_stages(whole["stream"][layer], layer, checkpoint=_checkpoint(choice),
                          only=lambda n: n.startswith(prefix) and n[len(prefix):] in SHOWN_STAGES)
    base = whole["trace"]
    return Trace(tokens=base.tokens, lengths=base.lengths, truncated=base.truncated, mask=base.mask, stages=stages,
                 settings=base.settings)


def generation_steps(choice: Choice, ids: tuple[int, ...], n_new: int, greedy: bool, temperature: float,
                     k: int | None, p: float | None, seed: int):
    """:func:`~transformer_core.analysis.generation.stream` with the KV cache after the prompt's ``ids`` (as
    :func:`summary` encoded and cut them): each step's dict as soon as its token is chosen."""
    from transformer_core.analysis.generation import stream

    decoder = face(choice)
    return stream(list(ids), n_new, greedy=greedy, temperature=temperature, k=k, p=p, seed=seed,
                  face=None if choice.is_smollm2 else decoder)


def ioi_intact(choice: Choice) -> dict:
    """The intact model's next word after the IOI prompt, from its cached :func:`summary` (no extra forward pass):
    ``{"targets": {" Mary": p, " John": p}, "top": [(label, id, p)] × 5}`` at T = 1, as
    :func:`~transformer_core.analysis.ablation.next_token.ablation_effect` gives ``"intact"``.

    Raises:
        ValueError: the model's tokenizer splits a target into several tokens.
    """
    from transformer_core.analysis.ablation.next_token import IOI_PROMPT, TARGETS, target_ids
    from transformer_core.analysis.predictions import softmax_t

    _net, tokenizer = model(choice)
    probs = softmax_t(summary(choice, IOI_PROMPT)["logits"], 1.0)  # [vocab] float64
    best = np.argsort(-probs, kind="stable")[:5]
    return {"targets": {t: float(probs[i]) for t, i in zip(TARGETS, target_ids(TARGETS, tokenizer))},
            "top": [(token_label(choice, int(i)), int(i), float(probs[i])) for i in best]}


@memo("llm_summaries")
def effect(choice: Choice, heads: tuple, mode: str, reference: str) -> dict:
    """:func:`~transformer_core.analysis.ablation.next_token.ablation_effect` on the IOI prompt."""
    from transformer_core.analysis.ablation.next_token import ablation_effect

    decoder = face(choice)
    return ablation_effect(heads=heads, mode=mode, reference=reference,
                           face=None if choice.is_smollm2 else decoder)


@memo("fixed_inputs", key=lambda choice, mode, reference, progress=None: (choice, mode, reference))
def ranked(choice: Choice, mode: str, reference: str, progress=None) -> dict:
    """:func:`~transformer_core.analysis.ablation.next_token.rank_heads` on the IOI prompt (one batched pass per layer,
    each from the ablated layer on; ~9 s of one core on SmolLM2). The prompt is fixed, so a ranking is kept an hour
    for everyone."""
    from transformer_core.analysis.ablation.next_token import rank_heads

    decoder = face(choice)
    return rank_heads(mode=mode, reference=reference, progress=progress,
                      face=None if choice.is_smollm2 else decoder)


@memo("fixed_inputs")
def ioi_last_rows(choice: Choice) -> dict:
    """The IOI prompt's readable tokens and the last position's attention weights in every head:
    ``{"tokens", "rows": [layer, head, key_pos]}``."""
    from transformer_core.analysis.ablation.next_token import IOI_PROMPT
    from transformer_core.models.smollm2_trace import run_smollm2

    face(choice)
    trace, _prediction = run_smollm2(IOI_PROMPT, only=lambda n: n.endswith(".attention.weights"),
                                     checkpoint=_checkpoint(choice))
    rows = np.stack([trace.stage("weights", layer)[0, :, -1, :] for layer in range(trace.n_layers)])
    return {"tokens": list(trace.tokens[0]), "rows": rows.astype(np.float32)}


def token_label(choice: Choice, tokenizer_id: int) -> str:
    """A readable label of one vocabulary id (``␣Mary``; a byte piece ``<0xE4><0xBB> (part of a character)``)."""
    from transformer_core.models.smollm2_trace import encode_labels

    _net, tokenizer = model(choice)
    return readable(encode_labels([tokenizer.id_to_token(int(tokenizer_id))])[0])


def lens_label(choice: Choice, tokenizer_id: int) -> str:
    """A token's label for a small cell: a byte piece that completes no character is ``‹bytes›`` (its bytes in
    the hover's full label would not fit: ``<0xE4><0xBB> (part of a character)``)."""
    return short_label(token_label(choice, tokenizer_id))


LENS_POSITIONS = 20  # the logit lens shows the prompt's last 20 positions (one row per layer × 20 cells)
MAX_PATCH_TOKENS = 32  # patching runs a batched pass per layer of heads and per layer of positions: its cost grows


@memo("llm_summaries")
def choices(choice: Choice, prompt: str) -> dict:
    """The tokens "What the heads write" offers: ``{"ids": the top-5 after the prompt, then the prompt's own tokens
    (each once), "probs": {id: probability at T = 1}, "labels": {id: readable label}, "nearest": {id: the prompt's
    token (another one) whose unembedding row is closest to this one's by cosine}}``: the default contrast, a
    word of the same kind (" Mary" → " John", " Berlin" → " Paris"); None when the prompt has no other whole token
    (:mod:`transformer_core.analysis.token_choices`)."""
    from transformer_core.analysis.logit_lens import unembedding
    from transformer_core.analysis.predictions import softmax_t
    from transformer_core.analysis.token_choices import is_byte_piece, nearest_by_unembedding, offered

    net, _tokenizer = model(choice)
    whole = summary(choice, prompt)
    probs = softmax_t(whole["logits"], 1.0)  # [vocab] float64
    ids, own = offered([i for _label, i, _p in whole["top"][-1]], whole["ids"])
    whole_tokens = [j for j in own if not is_byte_piece(token_label(choice, j))]  # a word or character
    nearest = nearest_by_unembedding(unembedding(net), ids, whole_tokens)
    return {"ids": ids, "probs": {i: float(probs[i]) for i in ids},
            "labels": {i: token_label(choice, i) for i in ids}, "nearest": nearest}


@memo("llm_summaries")
def attribution(choice: Choice, prompt: str, target: int, contrast: int | None) -> dict:
    """Direct logit attribution at the prompt's last position from :func:`summary`'s parts (no model run):
    :func:`~transformer_core.analysis.logit_attribution.direct_logit_attribution`."""
    from transformer_core.analysis.logit_attribution import direct_logit_attribution, head_outputs

    net, _tokenizer = model(choice)
    parts = summary(choice, prompt)["parts"]
    return direct_logit_attribution(net, {**parts, "heads": head_outputs(net, parts["contexts"])}, target, contrast)


@memo("llm_summaries")
def lens(choice: Choice, prompt: str, target: int) -> dict:
    """The logit lens of the prompt's last :data:`LENS_POSITIONS` positions from :func:`summary`'s residual stream
    (no model run; a row per layer through the final norm and W_U): :func:`~transformer_core.analysis.logit_lens.
    logit_lens` plus ``"labels"`` (each cell's top token, readable) and ``"first"`` (the first position shown)."""
    from transformer_core.analysis.logit_lens import logit_lens

    net, _tokenizer = model(choice)
    stream = summary(choice, prompt)["stream"]
    first = max(0, stream.shape[1] - LENS_POSITIONS)
    out = logit_lens(net, stream[:, first:], target)
    names = {int(i): lens_label(choice, int(i)) for i in np.unique(out["top_ids"])}
    out["labels"] = [[names[int(i)] for i in row] for row in out["top_ids"]]
    out["first"] = first
    return out


@memo("llm_summaries", key=lambda choice, prompt, corrupt, target, contrast, progress=None:
      (choice, prompt, corrupt, target, contrast))
def patched(choice: Choice, prompt: str, corrupt: str, target: int, contrast: int, progress=None) -> dict:
    """Activation patching from ``prompt`` (clean) into ``corrupt``: every head's output, then the residual stream
    entering every layer at every position (:mod:`transformer_core.analysis.patching`). ``progress(done, total)``
    over both (two batched passes per layer).

    Raises:
        ValueError: the two prompts differ in length, or are longer than :data:`MAX_PATCH_TOKENS` tokens.
    """
    from transformer_core.analysis.patching import patch_heads, patch_residual
    from transformer_core.text.tokenize import normalize_text

    decoder = face(choice)
    net = decoder.module
    clean = list(summary(choice, prompt)["ids"])
    dirty = decoder.encode(normalize_text(corrupt))[0]
    if len(clean) > MAX_PATCH_TOKENS:
        raise ValueError(_("patching takes prompts of at most {n} tokens; this one has {m}").format(
            n=MAX_PATCH_TOKENS, m=len(clean)))
    if len(dirty) != len(clean):
        raise ValueError(_("the corrupted prompt has {m} tokens and the prompt {n}: patching needs the same number, "
                           "position by position").format(m=len(dirty), n=len(clean)))
    n_layers = net.config.n_layers
    step = (lambda offset: (lambda done, total: progress(offset + done, 2 * total))) if progress else (lambda o: None)
    heads = patch_heads(net, clean, dirty, target, contrast, progress=step(0))
    positions = patch_residual(net, clean, dirty, target, contrast, progress=step(n_layers))
    return {"heads": heads["heads"], "positions": positions["positions"], "ld_clean": heads["ld_clean"],
            "ld_corrupt": heads["ld_corrupt"], "corrupt_tokens": [token_label(choice, i) for i in dirty]}
