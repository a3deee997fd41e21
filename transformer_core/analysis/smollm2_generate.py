"""Text generation with SmolLM2-135M and our KV cache: greedy or sampled, with each step's top-5.

Every step runs the model on the new token(s) only, appending their keys and values to a
:class:`~transformer_core.nn.gqa.KVCache` (Pope et al., "Efficiently Scaling Transformer Inference" (2022), §2:
the cached keys and values of earlier positions do not change under a causal mask, so they are computed once);
``use_cache=False`` reruns the whole sequence each step instead (the same numbers, slower; a test checks it).

Sampling order, per step, Hugging Face's (the default of :mod:`~transformer_core.analysis.predictions`, issue 35):
temperature (``softmax(logits / T)``, :func:`~transformer_core.analysis.predictions.softmax_t`) → top-k →
renormalise the k kept → top-p on those, most probable first → renormalise → draw from a ``torch.Generator`` seeded
with ``seed`` (:func:`~transformer_core.analysis.predictions.sampling_probs`), as ``generate`` applies
``TemperatureLogitsWarper`` → ``TopKLogitsWarper`` → ``TopPLogitsWarper``. ``order="both"`` keeps the earlier rule
(the tokens both filters keep, each on the original probabilities; :data:`~transformer_core.analysis.predictions.
FILTER_ORDERS`).

Shape legend: pos, vocab (49,152).
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from ..models.minilm import whole_number
from ..models.smollm2 import encode, load_smollm2
from ..models.smollm2_trace import encode_labels
from ..nn.gqa import KVCache
from .predictions import check_temperature, kept, sampling_probs, softmax_t

TOP = 5


def generate(prompt: str | list[int], n_new: int = 20, *, greedy: bool = True, temperature: float = 1.0,
             k: int | None = None, p: float | None = None, seed: int = 0, use_cache: bool = True,
             stop_at_eos: bool = True, model=None, order: str = "hf", face=None) -> dict:
    """Continue ``prompt`` (text, or token ids) by up to ``n_new`` tokens, with SmolLM2 or the decoder ``face``
    (:class:`~transformer_core.models.face.Decoder`, e.g. a local checkpoint; its tokenizer and EOS).

    ``greedy=True`` takes the most probable token (T, k, p are ignored); otherwise draws as the module docstring
    says (top-k and top-p combined in ``order``). Stops early after ``<|im_end|>`` (the model's EOS) when
    ``stop_at_eos``.

    Returns ``{"ids": prompt + new ids, "n_prompt", "new_ids", "text" (the new tokens decoded), "labels" (readable
    labels of the new tokens), "steps": one dict per new token ``{"id", "label", "prob" (its probability at T = 1),
    "chosen_prob" (its probability in the distribution drawn from; 1 for greedy), "top": [(label, id, prob)] × 5
    at T = 1}``.

    Raises:
        ValueError: empty prompt, ``n_new`` not in 0…4096, a bad T, k or p; more positions than the model takes.
        SmolLM2Unavailable: the GGUF file is missing or corrupt.
    """
    n_new = whole_number(n_new, "n_new", 0, 4096)
    if not greedy:
        check_temperature(temperature)
        kept(np.ones(1), k, p, order)  # checks k, p and order before any forward pass
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
    steps = _run(model, ids, n_new, greedy, temperature, k, p, seed, use_cache, eos, order)
    return _with_labels(ids, n_prompt, steps, tokenizer or load_smollm2()[1])


def stream(prompt_ids: list[int], n_new: int = 20, *, greedy: bool = True, temperature: float = 1.0,
           k: int | None = None, p: float | None = None, seed: int = 0, stop_at_eos: bool = True,
           order: str = "hf", face=None) -> Iterator[dict]:
    """:func:`generate` with the KV cache (on SmolLM2 or the decoder ``face``), one step at a time: yields each new token's step dict (as in
    :func:`generate`'s ``"steps"``, with ``"label"`` and the top-5 labelled) as soon as it is chosen, so a page can
    show the tokens as they come. The steps are :func:`generate`'s, in order (tests/test_llm_cache.py).

    Raises:
        ValueError, SmolLM2Unavailable: as :func:`generate`, before the first step.
    """
    n_new = whole_number(n_new, "n_new", 0, 4096)
    if not greedy:
        check_temperature(temperature)
        kept(np.ones(1), k, p, order)
    ids = list(prompt_ids)
    if not ids:
        raise ValueError("no tokens: type a prompt")
    model, tokenizer = load_smollm2() if face is None else face.parts()[:2]
    eos = getattr(model, "eos_id", None) if stop_at_eos else None
    for step in _steps(model, ids, n_new, greedy, temperature, k, p, seed, True, eos, order):
        yield _with_labels(list(ids), len(ids) - 1, [step], tokenizer)["steps"][0]


def _run(model, ids: list[int], n_new: int, greedy: bool, temperature: float, k: int | None, p: float | None,
         seed: int, use_cache: bool, eos: int | None, order: str = "hf") -> list[dict]:
    """The generation loop: appends to ``ids`` in place; one ``{"id", "prob", "chosen_prob", "top": [(id, prob)]}``
    per new token."""
    return list(_steps(model, ids, n_new, greedy, temperature, k, p, seed, use_cache, eos, order))


def _steps(model, ids: list[int], n_new: int, greedy: bool, temperature: float, k: int | None, p: float | None,
           seed: int, use_cache: bool, eos: int | None, order: str = "hf") -> Iterator[dict]:
    """:func:`_run`, yielding each step as it is chosen (``ids`` has the token appended when it is yielded)."""
    generator = torch.Generator().manual_seed(int(seed))
    cache = KVCache(len(model.layers)) if use_cache else None
    with torch.no_grad():
        new_input = list(ids)
        for _ in range(n_new):
            x = torch.tensor([new_input if use_cache else ids])  # [1, pos]: only the new tokens with a cache
            logits = model(x, cache, last_only=True)[0, -1]  # [vocab]
            probs = torch.softmax(logits.double(), dim=-1)  # T = 1, for the top-5 shown
            if greedy:
                token, chosen = int(torch.argmax(logits)), 1.0
            else:
                dist = sampling_probs(softmax_t(logits, temperature), k, p, order)
                token = int(torch.multinomial(torch.from_numpy(dist), 1, generator=generator))
                chosen = float(dist[token])
            best = probs.topk(TOP)
            ids.append(token)
            new_input = [token]
            yield {"id": token, "prob": float(probs[token]), "chosen_prob": chosen,
                   "top": [(int(i), float(q)) for q, i in zip(best.values, best.indices)]}
            if token == eos:
                break


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
    steps = _run(model, ids, whole_number(n_new, "n_new", 0, 4096), True, 1.0, None, None, 0, use_cache, None)
    return np.asarray([s["id"] for s in steps], dtype=np.int64)
