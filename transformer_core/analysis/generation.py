"""Text generation, one loop for every model: greedy or sampled, with the KV cache where the model has one.

:func:`continuation` is the loop: it asks the model for the next token's logits, chooses a token (:func:`choose`) and
appends it, ``n_new`` times. What differs between models is only how the logits are had (:func:`decoder_logits`,
:func:`causal_logits`):

* a decoder (SmolLM2, a local checkpoint) runs on the new token(s) only, appending their keys and values to a
  :class:`~transformer_core.nn.gqa.KVCache` (Pope et al., "Efficiently Scaling Transformer Inference" (2022), §2: the
  cached keys and values of earlier positions do not change under a causal mask, so they are computed once);
  ``use_cache=False`` reruns the whole sequence each step instead (the same numbers, slower; a test checks it).
  :func:`generate` and :func:`stream` label each step with its top-5;
* the causal model trained here has no cache: :func:`sample` reruns the sequence each step and gives the loss.

Sampling order, per step, Hugging Face's (the default of :mod:`~transformer_core.analysis.predictions`): temperature
(``softmax(logits / T)``, :func:`~transformer_core.analysis.predictions.softmax_t`) → top-k → renormalise the k kept →
top-p on those, most probable first → renormalise → draw from a ``torch.Generator`` seeded with ``seed``
(:func:`~transformer_core.analysis.predictions.sampling_probs`), as ``generate`` applies ``TemperatureLogitsWarper`` →
``TopKLogitsWarper`` → ``TopPLogitsWarper``. ``order="both"`` keeps the earlier rule
(:data:`~transformer_core.analysis.predictions.FILTER_ORDERS`). Same arguments ⇒ same tokens, in any thread.

Shape legend: pos, vocab.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import torch

from ..models.causal import CausalLM, token_losses
from ..models.minilm import whole_number
from ..models.smollm2 import encode, load_smollm2
from ..models.smollm2_trace import encode_labels
from ..nn.gqa import KVCache
from .predictions import check_temperature, kept, sampling_probs, softmax_t

TOP = 5


def choose(logits: torch.Tensor, generator: torch.Generator, *, greedy: bool = False, temperature: float = 1.0,
           k: int | None = None, p: float | None = None, order: str = "hf") -> tuple[int, float]:
    """One step's token from ``logits [vocab]``: ``(id, its probability in the distribution drawn from)`` — the
    argmax and 1 when ``greedy``, else a draw from ``generator`` as the module docstring says."""
    if greedy:
        return int(torch.argmax(logits)), 1.0
    dist = sampling_probs(softmax_t(logits, temperature), k, p, order)
    token = int(torch.multinomial(torch.from_numpy(dist), 1, generator=generator))
    return token, float(dist[token])


def continuation(next_logits: Callable[[list[int]], torch.Tensor], ids: list[int], n_new: int, *,
                 greedy: bool = False, temperature: float = 1.0, k: int | None = None, p: float | None = None,
                 order: str = "hf", seed: int = 0, eos: int | None = None) -> Iterator[tuple[int, float, torch.Tensor]]:
    """The generation loop: ``n_new`` times, ``next_logits(ids)`` (``[vocab]``, the last position's), a token chosen
    (:func:`choose`, one ``torch.Generator`` seeded with ``seed`` for the whole run) and appended to ``ids`` in place;
    yields ``(id, chosen probability, logits)`` after each append, and stops after ``eos``."""
    generator = torch.Generator().manual_seed(int(seed))
    with torch.no_grad():
        for _ in range(n_new):
            logits = next_logits(ids)
            token, chosen = choose(logits, generator, greedy=greedy, temperature=temperature, k=k, p=p, order=order)
            ids.append(token)
            yield token, chosen, logits
            if token == eos:
                break


def decoder_logits(model, use_cache: bool = True) -> Callable[[list[int]], torch.Tensor]:
    """``next_logits`` of a decoder module for :func:`continuation`: with a KV cache, each call feeds only the ids
    added since the last call; without, the whole sequence."""
    cache = KVCache(len(model.layers)) if use_cache else None
    fed = 0

    def last(ids: list[int]) -> torch.Tensor:
        nonlocal fed
        x = torch.tensor([ids[fed:] if cache is not None else ids])  # [1, pos]: only the new tokens with a cache
        fed = len(ids)
        return model(x, cache, last_only=True)[0, -1]  # [vocab]

    return last


def causal_logits(model: CausalLM) -> Callable[[list[int]], torch.Tensor]:
    """``next_logits`` of the causal model (no cache: the whole sequence each step)."""
    return lambda ids: model(torch.tensor([ids]))[0, -1]


def _check(n_new: int, greedy: bool, temperature: float, k: int | None, p: float | None, order: str) -> int:
    n_new = whole_number(n_new, "n_new", 0, 4096)
    if not greedy:
        check_temperature(temperature)
        kept(np.ones(1), k, p, order)  # checks k, p and order before any forward pass
    return n_new


def _decoder_steps(model, ids: list[int], n_new: int, greedy: bool, temperature: float, k: int | None,
                   p: float | None, seed: int, use_cache: bool, eos: int | None, order: str = "hf") -> Iterator[dict]:
    """:func:`continuation` on a decoder: one ``{"id", "prob" (at T = 1), "chosen_prob", "top": [(id, prob)] × 5 at
    T = 1}`` per new token, as it is chosen."""
    for token, chosen, logits in continuation(decoder_logits(model, use_cache), ids, n_new, greedy=greedy,
                                              temperature=temperature, k=k, p=p, order=order, seed=seed, eos=eos):
        probs = torch.softmax(logits.double(), dim=-1)  # T = 1, for the top-5 shown
        best = probs.topk(TOP)
        yield {"id": token, "prob": float(probs[token]), "chosen_prob": chosen,
               "top": [(int(i), float(q)) for q, i in zip(best.values, best.indices)]}


def generate(prompt: str | list[int], n_new: int = 20, *, greedy: bool = True, temperature: float = 1.0,
             k: int | None = None, p: float | None = None, seed: int = 0, use_cache: bool = True,
             stop_at_eos: bool = True, model=None, order: str = "hf", face=None) -> dict:
    """Continue ``prompt`` (text, or token ids) by up to ``n_new`` tokens, with SmolLM2 or the decoder ``face``
    (:class:`~transformer_core.models.face.Decoder`, e.g. a local checkpoint; its tokenizer and EOS).

    ``greedy=True`` takes the most probable token (T, k, p are ignored); otherwise draws as the module docstring
    says (top-k and top-p combined in ``order``). Stops early after the model's EOS when ``stop_at_eos``.

    Returns ``{"ids": prompt + new ids, "n_prompt", "new_ids", "text" (the new tokens decoded), "labels" (readable
    labels of the new tokens), "steps": one dict per new token ``{"id", "label", "prob" (its probability at T = 1),
    "chosen_prob" (its probability in the distribution drawn from; 1 for greedy), "top": [(label, id, prob)] × 5
    at T = 1}``.

    Raises:
        ValueError: empty prompt, ``n_new`` not in 0…4096, a bad T, k or p; more positions than the model takes.
        SmolLM2Unavailable: the GGUF file is missing or corrupt.
    """
    n_new = _check(n_new, greedy, temperature, k, p, order)
    special = False
    if face is not None:
        model, tokenizer, special = face.parts()
    elif model is None:
        model, tokenizer = load_smollm2()
    else:
        tokenizer = None
    ids = list(prompt) if not isinstance(prompt, str) else \
        encode(prompt, tokenizer or load_smollm2()[1], add_special_tokens=special)[0]
    if not ids:
        raise ValueError("no tokens: type a prompt")
    n_prompt = len(ids)
    eos = getattr(model, "eos_id", None) if stop_at_eos else None
    steps = list(_decoder_steps(model, ids, n_new, greedy, temperature, k, p, seed, use_cache, eos, order))
    return _with_labels(ids, n_prompt, steps, tokenizer or load_smollm2()[1])


def stream(prompt_ids: list[int], n_new: int = 20, *, greedy: bool = True, temperature: float = 1.0,
           k: int | None = None, p: float | None = None, seed: int = 0, stop_at_eos: bool = True,
           order: str = "hf", face=None) -> Iterator[dict]:
    """:func:`generate` with the KV cache (on SmolLM2 or the decoder ``face``), one step at a time: yields each new
    token's step dict (as in :func:`generate`'s ``"steps"``, with ``"label"`` and the top-5 labelled) as soon as it is
    chosen, so a page can show the tokens as they come. The steps are :func:`generate`'s, in order.

    Raises:
        ValueError, SmolLM2Unavailable: as :func:`generate`, before the first step.
    """
    n_new = _check(n_new, greedy, temperature, k, p, order)
    ids = list(prompt_ids)
    if not ids:
        raise ValueError("no tokens: type a prompt")
    model, tokenizer = load_smollm2() if face is None else face.parts()[:2]
    eos = getattr(model, "eos_id", None) if stop_at_eos else None
    for step in _decoder_steps(model, ids, n_new, greedy, temperature, k, p, seed, True, eos, order):
        yield _with_labels(list(ids), len(ids) - 1, [step], tokenizer)["steps"][0]


def _with_labels(ids: list[int], n_prompt: int, steps: list[dict], tokenizer) -> dict:
    new = ids[n_prompt:]
    raw = [tokenizer.id_to_token(i) for i in new]
    labels = encode_labels(raw)
    for step, label in zip(steps, labels):
        step["label"] = label
        step["top"] = [(encode_labels([tokenizer.id_to_token(i)])[0], i, q) for i, q in step["top"]]
    return {"ids": ids, "n_prompt": n_prompt, "new_ids": new, "labels": labels, "steps": steps,
            "text": tokenizer.decode(new, skip_special_tokens=False)}


def greedy_ids(prompt_ids: list[int], n_new: int, *, use_cache: bool = True, model=None) -> np.ndarray:
    """Only the greedy continuation's ids ``[n_new]`` (no EOS stop): what the cache test and the benchmark compare."""
    if model is None:
        model, _ = load_smollm2()
    ids = list(prompt_ids)
    steps = _decoder_steps(model, ids, whole_number(n_new, "n_new", 0, 4096), True, 1.0, None, None, 0, use_cache,
                           None)
    return np.asarray([s["id"] for s in steps], dtype=np.int64)


def sample(model: CausalLM, prompt: list[int], n_new: int, *, temperature: float = 1.0, k: int | None = None,
           p: float | None = None, seed: int = 0, order: str = "hf") -> dict:
    """Extend ``prompt`` by ``n_new`` tokens of the causal model, drawn from ``softmax(logits / T)`` with top-k/top-p
    (combined in ``order``) by :func:`continuation`.

    Stops at the model's ``max_positions``. Returns ``{"ids": prompt + new, "n_prompt", "loss": [pos−1]
    nats predicting each token from the ones before (the model's own loss, T = 1), "chosen_prob": [pos−1]
    the sampling probability of each drawn token (NaN for the prompt's)}``.

    Raises:
        ValueError: empty prompt, a bad T, k, p or order.
    """
    if not prompt:
        raise ValueError("no tokens: type or generate a sequence")
    check_temperature(temperature)
    kept(np.ones(1), k, p, order)  # checks k, p and order before any forward pass
    ids = list(prompt)[:model.config.max_positions]
    n_prompt = len(ids)
    n_steps = max(0, min(model.config.max_positions, n_prompt + n_new) - n_prompt)
    chosen = [float("nan")] * (n_prompt - 1)
    chosen += [c for _t, c, _l in continuation(causal_logits(model), ids, n_steps, temperature=temperature, k=k, p=p,
                                                order=order, seed=seed)]
    with torch.no_grad():
        x = torch.tensor([ids])
        loss = token_losses(model(x), x)[0].numpy() if len(ids) > 1 else np.zeros(0)
    return {"ids": ids, "n_prompt": n_prompt, "loss": loss, "chosen_prob": np.asarray(chosen)}
