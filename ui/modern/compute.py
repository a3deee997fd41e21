"""Cached compute of the "Attention since 2017" page: :func:`~ui.shell.cache.memo` (keyed by value, arrays
read-only) around :mod:`transformer_core.analysis` (positions_lab, shared_kv, kv_cache_steps, long_inputs,
online_lab), where the numbers are made; NumPy arrays and plain values out. Model errors
(``CausalUnavailable``, ``SmolLM2Unavailable``, ``PretrainedUnavailable``) are raised, not cached.
"""
from __future__ import annotations

import numpy as np

from transformer_core.analysis import kv_cache_steps, long_inputs, online_lab, positions_lab

from ..shell.cache import memo
from ..shell.diagnostics import count_forwards

CAUSAL_PROMPT = (5, 17, 3, 40, 22, 9, 31, 8, 5, 17, 3, 40, 22, 9, 31, 8)  # a period-8 sequence, twice
SMOLLM2_PROMPT = "The capital of France is Paris. The capital of Germany is"
LONG_TEXT = "The capital of France is Paris. The capital of Germany is"
N_NEW = 32
MAX_LAB_TOKENS = 16  # tokens of the positions lab's heatmaps (four stand across the page)
QUERY_POSITIONS = (40, 200)


@memo("lesson_results")
def positions(tokens: tuple[str, ...], alibi_head: int, query: int, key: int) -> dict:
    """Everything the positions tab draws, for ``tokens`` (at most 16) and the chosen query/key tokens
    (:func:`~transformer_core.analysis.positions_lab.tab_numbers`)."""
    return positions_lab.tab_numbers(tokens, alibi_head, query, key, QUERY_POSITIONS, MAX_LAB_TOKENS)


def _smollm2():
    from transformer_core.models.smollm2 import encode, load_smollm2

    model, tokenizer = load_smollm2()
    count_forwards(model, "smollm2")
    return model, tokenizer, encode


def is_large(model_name: str) -> bool:
    """Whether generating with the model takes seconds here (SmolLM2, a local checkpoint), not a moment (the causal
    model): its sizes, asked of its face without running it."""
    from transformer_core import models

    return not isinstance(models.load(model_name), models.CausalFace)


@memo("fixed_inputs")
def cache_steps(model_name: str) -> dict:
    """32 greedy steps with a KV cache on ``"causal"`` (the trained causal model, :data:`CAUSAL_PROMPT`) or
    ``"smollm2"`` (:data:`SMOLLM2_PROMPT`), each checked against recomputation; token labels included, and
    ``"seconds"``: what generating and checking took here (wall time), ``"layer"``: the layer whose weights are kept.

    The prompt is fixed, so the result is computed once and kept (the "fixed_inputs" cache, an hour) for everyone: the
    generation is 32 cached steps and the check one run over the whole sequence (SmolLM2: 33 forward calls)."""
    import time

    from transformer_core import models

    start = time.perf_counter()
    face = models.load(model_name)
    if isinstance(face, models.CausalFace):
        out = kv_cache_steps.generate_causal(face.module, list(CAUSAL_PROMPT), N_NEW)
        labels = [str(t) for t in out["tokens"]]
        layer = 1  # the induction heads
        layer_weights = [np.asarray(s.weights[layer], np.float32) for s in out["steps"]]
        c = face.config
        n_layers, n_kv, d_head = c.n_layers, c.n_kv_heads, c.d_head
    else:
        layer = 5
        model, tokenizer, encode = _smollm2()
        ids, _tokens, _labels = encode(SMOLLM2_PROMPT, tokenizer)
        out = kv_cache_steps.generate_smollm2(model, ids, N_NEW, layer=layer)
        labels = [tokenizer.decode([t]).replace(" ", "␣") or "·" for t in out["tokens"]]
        layer_weights = [np.asarray(s.weights, np.float32) for s in out["steps"]]
        n_layers, n_kv, d_head = model.config.n_layers, model.config.n_kv_heads, model.config.d_head
    return {"labels": labels, "prefill": out["prefill_rows"], "weights": layer_weights,
            "diffs": [s.max_abs_diff for s in out["steps"]], "rows": [s.cache_rows[0] for s in out["steps"]],
            "query_shape": [list(s.query_shape) for s in out["steps"]], "max_diff": out["max_abs_diff"],
            "n_layers": n_layers, "n_kv": n_kv, "d_head": d_head, "seconds": time.perf_counter() - start,
            "layer": layer}


@memo("fixed_inputs")
def token_times(model_name: str) -> dict:
    """Seconds per generated token, greedy, :data:`N_NEW` tokens after the tab's prompt, measured now on this server:
    ``{"cached", "uncached", "n", "same"}`` (``same``: both ways chose the same tokens). Without the cache each step
    runs the model over the whole sequence so far (:func:`~transformer_core.analysis.kv_cache_steps.timed_greedy`)."""
    from transformer_core import models

    face = models.load(model_name)
    if isinstance(face, models.CausalFace):
        model, prompt = face.module, list(CAUSAL_PROMPT)
    else:
        model, tokenizer, encode = _smollm2()
        prompt = list(encode(SMOLLM2_PROMPT, tokenizer)[0])
    return kv_cache_steps.timed_greedy(model, prompt, N_NEW)


@memo("fixed_inputs")
def long_input_ids() -> dict:
    """SmolLM2's tokens of :data:`LONG_TEXT` (labels shown with ␣ for a space)."""
    _model, tokenizer, encode = _smollm2()
    ids, _tokens, labels = encode(LONG_TEXT, tokenizer)
    return {"ids": tuple(ids), "labels": labels}


@memo("fixed_inputs")
def full_logits() -> np.ndarray:
    """SmolLM2's logits ``[vocab]`` after :data:`LONG_TEXT` with every key (no window): one run, kept an hour."""
    model, _tokenizer, _encode = _smollm2()
    return long_inputs.windowed_last_logits(model, list(long_input_ids()["ids"]), None).numpy()


@memo("lesson_results")
def window_run(window: int, sinks: int) -> dict:
    """Top-5 of the last position with every key, with the window, and with the window plus ``sinks``: one batched
    forward pass per (window, sinks), the unwindowed run shared by all (:func:`full_logits`)."""
    model, tokenizer, _encode = _smollm2()
    ids = list(long_input_ids()["ids"])
    return long_inputs.window_run(model, ids, window, sinks, lambda i: tokenizer.decode([i]).replace(" ", "␣"),
                                  full_logits=full_logits())


@memo("lesson_results")
def online(n: int, block_q: int, block_k: int, mask_kind: str, seed: int = 0) -> dict:
    """The online softmax on one random head of ``n`` positions (d_head 8), every tile recorded
    (:func:`~transformer_core.analysis.online_lab.online_demo`)."""
    return online_lab.online_demo(n, block_q, block_k, mask_kind, seed)
