"""Head ablation in a decoder — SmolLM2-135M or a local checkpoint — on one prompt: what the next token's target
probabilities become (p(" Mary") and p(" John") by default), and which heads matter.

A head's context is zeroed (``"zero"``: the same as zeroing the head's slice of ``o_proj``'s input in Hugging Face's
``LlamaForCausalLM``, whose ``head_mask`` transformers 5 ignores; the tests use a forward pre-hook) or replaced by
``"mean"``: the head's mean context over every position of a named reference set of prompts (:data:`REFERENCE_SETS`,
run on the same model), so what the head does on *this* prompt is removed but its average output stays (mean ablation;
Wang et al., "Interpretability in the Wild: a Circuit for Indirect Object Identification in GPT-2 small" (2022), §3,
ablate with a mean over a reference distribution of IOI prompts). A named variant: pooled over positions
(:func:`~transformer_core.analysis.ablation.references.pooled_means`), where MiniLM and the causal model take the mean
per position; the reference prompts here differ in length and token positions. Each decoder's means are its own
(:func:`decoder_reference` runs the set on it, once per process).

The default prompt is Wang et al.'s indirect-object sentence; SmolLM2 gives " Mary" p ≈ 0.92 there.
:func:`rank_heads` ablates each head alone (:class:`NextToken` through
:func:`~transformer_core.analysis.ablation.ranking.rank_heads`): the copies of one layer run as one batch, started from
the intact run's residual stream entering that layer (the layers before it are not changed by the ablation), only the
last position unembedded.

Shape legend: layer (30), head (9), copy, pos, d_head (64), vocab.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

import numpy as np
import torch

from ...models.face import Decoder
from ...models.smollm2 import encode
from ...models.smollm2_trace import encode_labels
from ...nn.gqa import rope_for
from ...nn.head_ablation import Head, check_mode
from ...nn.hooks import capture
from . import ranking
from .references import ReferenceMeans, pooled_means

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


def decoder_reference(name: str = "ioi", face=None) -> ReferenceMeans:
    """Each head's mean context over every position of the reference set ``name``, pooled (``.pooled[layer]``
    ``[head, d_head]``, put in at every position), on SmolLM2 (``face`` None) or the decoder ``face`` (its prompts
    encoded as its own tokenizer does, a BOS included where it adds one). Computed once per process and model.

    Raises:
        KeyError: an unknown set (the message lists :data:`REFERENCE_SETS`). SmolLM2Unavailable: it is missing.
    """
    if name not in REFERENCE_SETS:
        raise KeyError(f"no reference set {name!r}: choose one of {sorted(REFERENCE_SETS)}")
    return _reference(name, "smollm2" if face is None else face.name)


@functools.lru_cache(maxsize=4)
def _reference(name: str, model_name: str) -> ReferenceMeans:
    from ...models import load  # the registry (it imports the analyses' faces: not at module import)

    model, tokenizer, special = load(model_name).parts()
    total, count = None, 0
    for prompt in REFERENCE_SETS[name]:
        ids, _, _ = encode(prompt, tokenizer, add_special_tokens=special)
        with torch.no_grad(), capture(model, only=lambda n: n.endswith("attention.context")) as st:
            model(torch.tensor([ids]), last_only=True)
        contexts = torch.stack([st[f"layers.{i}.attention.context"][0] for i in range(len(model.layers))])
        summed = contexts.sum(dim=2)  # [layer, head, d_head]: summed over positions
        total = summed if total is None else total + summed
        count += len(ids)
    means = total / count
    return pooled_means(name, {layer: means[layer] for layer in range(means.shape[0])})


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


class NextToken:
    """A decoder's measure (:class:`~transformer_core.analysis.ablation.ranking.Measure`) on one prompt's ``ids``: a
    run gives the last position's logits ``[copies, vocab]``; a copy compares by its next-token probabilities of
    ``targets`` (ids), ``[copies, target]`` float64."""

    rows, real = 1, None  # one prompt; every position is a token

    def __init__(self, ids: list[int], targets: list[int]) -> None:
        self.ids, self.targets = list(ids), list(targets)

    def intact(self, face) -> dict:
        """``{"logits": [vocab], "entering": {layer: residual stream entering it [1, pos, d_model]}}``."""
        model = face.module
        n_layers = model.config.n_layers
        wanted = {"embeddings"} | {f"layers.{i}.feed_forward.output" for i in range(n_layers - 1)}
        with capture(model, only=lambda n: n in wanted) as st:
            logits = model(torch.tensor([self.ids]), last_only=True)[0, -1]
        entering = {i: st["embeddings"] if i == 0 else st[f"layers.{i - 1}.feed_forward.output"]
                    for i in range(n_layers)}
        return {"logits": logits, "entering": entering}

    def run(self, face, copies: int = 1, *, layer: int | None = None, intact=None) -> torch.Tensor:
        model = face.module
        x = torch.tensor([self.ids]).expand(copies, -1)  # [copy, pos]
        if layer is None or intact is None:
            return model(x, last_only=True)[:, -1]
        cos, sin = rope_for(model.config, 0, len(self.ids))  # [pos, d_head]
        # only the ablated block needs the intervention; the later blocks take the model's plain (unhooked) path
        after = model.layers[layer](intact["entering"][layer].expand(copies, -1, -1), cos, sin, None, layer)
        return model(x, start_layer=layer + 1, residual=after, last_only=True)[:, -1]  # [copy, vocab]

    def compare(self, intact, ablated: torch.Tensor, copies: int) -> np.ndarray:
        return torch.softmax(ablated.double(), -1)[:, self.targets].numpy()

    def group(self, n_heads: int) -> int:
        return n_heads


def _setup(face, mode: str, reference: str, prompt: str, targets: tuple[str, ...]):
    """``(face, prompt ids, labels, target ids, reference means or None)``, every check made before any work."""
    check_mode(mode, MODES)
    face = Decoder() if face is None else face
    _model, tokenizer, special = face.parts()
    ids, _raw, labels = encode(prompt, tokenizer, add_special_tokens=special)
    if not ids:
        raise ValueError("no tokens: type a prompt")
    t_ids = target_ids(targets, tokenizer)
    return face, ids, labels, t_ids, (decoder_reference(reference, face) if mode == "mean" else None)


def _summary(probs: torch.Tensor, targets: tuple[str, ...], ids: list[int], tokenizer, top: int) -> dict:
    best = probs.topk(top)
    return {"targets": {t: float(probs[i]) for t, i in zip(targets, ids)},
            "top": [(encode_labels([tokenizer.id_to_token(int(i))])[0], int(i), float(p))
                    for p, i in zip(best.values, best.indices)]}


def ablation_effect(prompt: str = IOI_PROMPT, heads: Iterable[Head] = (), *, mode: str = "zero",
                    reference: str = "ioi", targets: Iterable[str] = TARGETS, top: int = 5, face=None) -> dict:
    """The next token after ``prompt``, intact and with ``heads`` (``[(layer, head)]``) ablated; on SmolLM2
    (``face`` None), or on the decoder ``face`` (:class:`~transformer_core.models.face.Decoder`).

    Returns ``{"tokens": readable labels of the prompt, "heads", "mode", "reference", "intact" and "ablated":
    {"targets": {target: probability}, "top": [(label, id, probability)] × top}}``.

    Raises:
        ValueError: empty prompt, a target that is not one token, a bad mode or head.
        KeyError: unknown reference set. SmolLM2Unavailable: the GGUF file is missing.
    """
    targets = tuple(targets)
    face, ids, labels, t_ids, means = _setup(face, mode, reference, prompt, targets)
    heads = ranking.check_heads(heads, face.config)
    measure = NextToken(ids, t_ids)
    runs = {"intact": ranking.effect(face, measure)[0],
            "ablated": ranking.effect(face, measure, heads, mode=mode, reference=means)[0]}
    return {"tokens": labels, "heads": heads, "mode": mode, "reference": reference,
            **{k: _summary(torch.softmax(v.double(), dim=-1), targets, t_ids, face.tokenizer, top)
               for k, v in runs.items()}}


def rank_heads(prompt: str = IOI_PROMPT, *, mode: str = "zero", reference: str = "ioi",
               targets: Iterable[str] = TARGETS, progress: Callable[[int, int], None] | None = None,
               face=None) -> dict:
    """Ablate each of the 270 heads alone (every head of the decoder ``face`` when given); the targets'
    probabilities after the prompt each time. One batched forward per layer (copy h ablating head h), started at that
    layer from the intact run's residual stream. ``progress(done, total)`` after each layer (total 30).

    Returns ``{"probs": [layer, head, target] float64, "intact": [target], "targets", "mode", "reference",
    "effect": [layer, head] intact − ablated probability of the first target (> 0: the head helped it)}``.

    Raises: as :func:`ablation_effect`.
    """
    targets = tuple(targets)
    face, ids, _labels, t_ids, means = _setup(face, mode, reference, prompt, targets)
    measure = NextToken(ids, t_ids)
    ranked = ranking.rank_heads(face, measure, mode=mode, reference=means, progress=progress)
    probs = ranked["values"]
    intact = torch.softmax(ranked["intact"]["logits"].double(), -1)[t_ids].numpy()
    return {"probs": probs, "intact": intact, "targets": targets, "mode": mode, "reference": reference,
            "effect": intact[0] - probs[:, :, 0]}
