"""Head ablation in SmolLM2-135M on one prompt: what p(" Mary") and p(" John") become, and which heads matter.

A head's context ``[batch, head, query_pos, d_head]`` (its weights times its values, the 64 numbers it gives
W_O at each position) is replaced through :func:`~transformer_core.nn.hooks.intervene` (private to the thread):

* ``"zero"`` — by 0: the same as zeroing the head's 64-wide slice of ``o_proj``'s input in Hugging Face's
  ``LlamaForCausalLM`` (its ``head_mask`` is ignored since transformers 5; the tests use a forward pre-hook);
* ``"mean"`` — by the head's mean context over every position of a named reference set of prompts
  (:data:`REFERENCE_SETS`), so what the head does on *this* prompt is removed but its average output stays
  (mean-ablation; Wang et al., "Interpretability in the Wild: a Circuit for Indirect Object Identification in
  GPT-2 small" (2022), §3, ablate with a mean over a reference distribution of IOI prompts). A named variant:
  pooled over positions, where :mod:`~transformer_core.analysis.ablation` (MiniLM, the causal model) takes the
  mean per position; the reference prompts here differ in length and token positions.

The default prompt is Wang et al.'s indirect-object sentence; SmolLM2 gives " Mary" p ≈ 0.92 there.
:func:`rank_heads` ablates each of the 270 heads alone; the copies of one layer run as one batch, started from
the intact run's residual stream entering that layer (the layers before it are not changed by the ablation) and
unembedding only the last position. :func:`head_stats_smollm2` adds each head's attention-sink share.

Shape legend: layer (30), head (9), batch, pos, d_head (64), vocab.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd
import torch

from ..models.smollm2 import encode, load_smollm2
from ..models.smollm2_trace import encode_labels
from ..nn.gqa import rope_for
from ..nn.hooks import capture, intervene
from ..records.trace import Trace
from .ablation import Head, head_mask
from .head_stats import row_stats

IOI_PROMPT = "When Mary and John went to the store, John gave a drink to"
TARGETS = (" Mary", " John")
MODES = ("zero", "mean")
REFERENCE_SETS = {  # name → prompts whose mean context per head a "mean" ablation puts in
    "ioi": (
        "When Mary and John went to the store, John gave a drink to",
        "When Tom and Anna went to the park, Anna gave a ball to",
        "When Alice and Bob went to the office, Bob handed a letter to",
        "After Sarah and David arrived at the party, David brought a cake to",
        "When Lisa and Mark went to the station, Lisa showed a ticket to",
        "While Emma and James were at the library, James lent a book to",
    ),
}


@functools.lru_cache(maxsize=4)
def reference_means(name: str = "ioi") -> torch.Tensor:
    """Mean context of every head over every position of the reference set ``name``: ``[layer, head, d_head]``.

    Raises:
        KeyError: an unknown set (the message lists :data:`REFERENCE_SETS`).
    """
    if name not in REFERENCE_SETS:
        raise KeyError(f"no reference set {name!r}: choose one of {sorted(REFERENCE_SETS)}")
    model, tokenizer = load_smollm2()
    total, count = None, 0
    for prompt in REFERENCE_SETS[name]:
        ids, _, _ = encode(prompt, tokenizer)
        with torch.no_grad(), capture(model, only=lambda n: n.endswith("attention.context")) as st:
            model(torch.tensor([ids]), last_only=True)
        contexts = torch.stack([st[f"layers.{i}.attention.context"][0] for i in range(len(model.layers))])
        summed = contexts.sum(dim=2)  # [layer, head, d_head]: summed over positions
        total = summed if total is None else total + summed
        count += len(ids)
    return total / count


def ablation_edits(mask: torch.Tensor, mode: str, reference: str = "ioi") -> dict:
    """``{stage: edit}`` for :func:`~transformer_core.nn.hooks.intervene`: ``mask`` bool ``[layer, batch or 1,
    head]``, ``True`` = replace that head's context (zero, or the reference set's mean).

    Raises:
        ValueError: unknown mode. KeyError: unknown reference set.
    """
    if mode not in MODES:
        raise ValueError(f"ablation mode must be one of {MODES}, got {mode!r}")
    means = reference_means(reference) if mode == "mean" else None
    edits = {}
    for layer in range(mask.shape[0]):
        if not bool(mask[layer].any()):
            continue
        cut = mask[layer][:, :, None, None]  # [batch|1, head, 1, 1]
        if mode == "zero":
            edits[f"layers.{layer}.attention.context"] = lambda c, cut=cut: c.masked_fill(cut, 0.0)
        else:
            mean = means[layer][None, :, None, :]  # [1, head, 1, d_head]
            edits[f"layers.{layer}.attention.context"] = \
                lambda c, cut=cut, mean=mean: torch.where(cut, mean.expand_as(c), c)
    return edits


def target_ids(targets: Iterable[str], tokenizer) -> list[int]:
    """The id of each target (a string that must be one token, e.g. ``" Mary"``).

    Raises:
        ValueError: a target that is not exactly one token (the message shows its tokens).
    """
    out = []
    for target in targets:
        enc = tokenizer.encode(target, add_special_tokens=False)
        if len(enc.ids) != 1:
            raise ValueError(f"{target!r} is {len(enc.ids)} tokens ({encode_labels(enc.tokens)}), not one")
        out.append(enc.ids[0])
    return out


def _last_probs(model, ids: list[int], mask: torch.Tensor | None, mode: str, reference: str) -> torch.Tensor:
    """Next-token probabilities after the prompt ``[vocab]``, with the heads in ``mask`` ablated."""
    edits = {} if mask is None else ablation_edits(mask, mode, reference)
    with torch.no_grad(), intervene(model, edits):
        logits = model(torch.tensor([ids]), last_only=True)[0, -1]
    return torch.softmax(logits.double(), dim=-1)


def _summary(probs: torch.Tensor, targets: tuple[str, ...], ids: list[int], tokenizer, top: int) -> dict:
    best = probs.topk(top)
    return {"targets": {t: float(probs[i]) for t, i in zip(targets, ids)},
            "top": [(encode_labels([tokenizer.id_to_token(int(i))])[0], int(i), float(p))
                    for p, i in zip(best.values, best.indices)]}


def _decoder(face, mode: str):
    """``(model, tokenizer, encode(text) → (ids, raw, labels))`` of SmolLM2 (``face`` None) or of a decoder's face
    (:class:`~transformer_core.models.face.Decoder`, e.g. a local checkpoint). The mean mode's reference sets are
    SmolLM2's runs, so another model ablates with zero only."""
    if face is None:
        model, tokenizer = load_smollm2()
        return model, tokenizer, lambda text: encode(text, tokenizer)
    if mode != "zero":
        raise ValueError(f"ablation mode {mode!r} needs SmolLM2's reference set: another model ablates with 'zero'")
    model, tokenizer, special = face.parts()
    return model, tokenizer, lambda text: encode(text, tokenizer, add_special_tokens=special)


def ablation_effect(prompt: str = IOI_PROMPT, heads: Iterable[Head] = (), *, mode: str = "zero",
                    reference: str = "ioi", targets: Iterable[str] = TARGETS, top: int = 5, face=None) -> dict:
    """The next token after ``prompt``, intact and with ``heads`` (``[(layer, head)]``) ablated; on SmolLM2, or on
    the decoder ``face`` (zero mode).

    Returns ``{"tokens": readable labels of the prompt, "heads", "mode", "reference", "intact" and "ablated":
    {"targets": {target: probability}, "top": [(label, id, probability)] × top}}``.

    Raises:
        ValueError: empty prompt, a target that is not one token, a bad mode or head.
        KeyError: unknown reference set. SmolLM2Unavailable: the GGUF file is missing.
    """
    model, tokenizer, encode_text = _decoder(face, mode)
    targets = tuple(targets)
    ids, raw, labels = encode_text(prompt)
    if not ids:
        raise ValueError("no tokens: type a prompt")
    heads = tuple(sorted(set(heads)))
    config = model.config
    for layer, head in heads:
        if not (0 <= layer < config.n_layers and 0 <= head < config.n_heads):
            raise ValueError(f"L{layer}H{head} does not exist: layers 0–{config.n_layers - 1}, "
                             f"heads 0–{config.n_heads - 1}")
    t_ids = target_ids(targets, tokenizer)
    intact = _last_probs(model, ids, None, mode, reference)
    ablated = _last_probs(model, ids, head_mask(heads, config.n_layers, config.n_heads), mode, reference)
    return {"tokens": labels, "heads": heads, "mode": mode, "reference": reference,
            "intact": _summary(intact, targets, t_ids, tokenizer, top),
            "ablated": _summary(ablated, targets, t_ids, tokenizer, top)}


def rank_heads(prompt: str = IOI_PROMPT, *, mode: str = "zero", reference: str = "ioi",
               targets: Iterable[str] = TARGETS, progress: Callable[[int, int], None] | None = None,
               face=None) -> dict:
    """Ablate each of the 270 heads alone (every head of the decoder ``face``, zero mode, when given); the targets'
    probabilities after the prompt each time.

    One batched forward per layer (9 copies, copy h ablating head h), started at that layer from the intact
    run's residual stream; only that layer's block runs under the intervention. ``progress(done, total)`` after each layer (total 30).

    Returns ``{"probs": [layer, head, target] float64, "intact": [target], "targets", "mode", "reference",
    "effect": [layer, head] intact − ablated probability of the first target (> 0: the head helped it)}``.

    Raises: as :func:`ablation_effect`.
    """
    model, tokenizer, encode_text = _decoder(face, mode)
    targets = tuple(targets)
    ids, _, _ = encode_text(prompt)
    if not ids:
        raise ValueError("no tokens: type a prompt")
    t_ids = target_ids(targets, tokenizer)
    ablation_edits(torch.zeros(1, 1, 1, dtype=torch.bool), mode, reference)  # bad mode / set: fail before the work
    n_layers, n_heads = model.config.n_layers, model.config.n_heads
    x = torch.tensor([ids])  # [1, pos]
    cos, sin = rope_for(model.config, 0, len(ids))  # [pos, d_head]
    wanted = {"embeddings"} | {f"layers.{i}.feed_forward.output" for i in range(n_layers - 1)}
    with torch.no_grad(), capture(model, only=lambda n: n in wanted) as st:
        intact_logits = model(x, last_only=True)[0, -1]
    intact = torch.softmax(intact_logits.double(), -1)[t_ids]
    probs = np.zeros((n_layers, n_heads, len(targets)))
    for layer in range(n_layers):
        entering = st["embeddings"] if layer == 0 else st[f"layers.{layer - 1}.feed_forward.output"]  # [1, pos, d]
        mask = torch.zeros(n_layers, n_heads, n_heads, dtype=torch.bool)  # [layer, copy, head]
        mask[layer] = torch.eye(n_heads, dtype=torch.bool)  # copy h ablates head h
        with torch.no_grad():
            # only the ablated block runs under the intervention: the later blocks take the model's plain (faster,
            # unhooked) path, as an intact run does
            with intervene(model, ablation_edits(mask, mode, reference)):
                after = model.layers[layer](entering.expand(n_heads, -1, -1), cos, sin, None, layer)
            logits = model(x.expand(n_heads, -1), start_layer=layer + 1, residual=after,
                           last_only=True)[:, -1]  # [copy, vocab]
        probs[layer] = torch.softmax(logits.double(), -1)[:, t_ids].numpy()
        if progress is not None:
            progress(layer + 1, n_layers)
    intact = intact.numpy()
    return {"probs": probs, "intact": intact, "targets": targets, "mode": mode, "reference": reference,
            "effect": intact[0] - probs[:, :, 0]}


def sink_share(weights: np.ndarray) -> np.ndarray:
    """Share of attention each head gives the first token (the "attention sink"; Xiao et al., "Efficient Streaming
    Language Models with Attention Sinks" (2024), §3.1): ``weights [head, query_pos, key_pos]`` → ``[head]``, the
    mean of ``w[:, i, 0]`` over query rows i ≥ 1 (row 0 can only look at itself); NaN for a one-token text."""
    weights = np.asarray(weights)
    if weights.shape[1] < 2:
        return np.full(weights.shape[0], np.nan)
    return weights[:, 1:, 0].mean(axis=1)


def head_stats_smollm2(trace: Trace) -> pd.DataFrame:
    """One row per layer × head (layer-major) of a :func:`~transformer_core.models.smollm2_trace.run_smollm2` trace:
    ``layer``, ``head``, ``kv_head`` (the key/value head it shares), ``entropy`` (nats), ``mean_distance``
    (positions), ``max_weight`` (as :mod:`~transformer_core.analysis.head_stats` defines them, over all query rows)
    and ``sink_share`` (:func:`sink_share`)."""
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
