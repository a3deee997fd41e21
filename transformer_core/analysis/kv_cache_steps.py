"""The KV cache step by step: generate with a cache, and check every step against recomputing the whole prefix.

A decoder's key and value rows of position ``t`` depend only on tokens ``0 … t`` (the causal mask), so they are the
same at every later step: a generation can keep them (the *KV cache*) and, for each new token, compute only that
token's query, key and value — one query row against all the cached keys — instead of the whole
``[pos, pos]`` score matrix again. Pope et al., "Efficiently Scaling Transformer Inference" (2022), §2, count what
this saves and what the cache costs.

For the causal model trained here (:mod:`transformer_core.models.causal`: learned positions, post-LN
:class:`~transformer_core.nn.attention.MultiHeadAttention`) the cached step is written out below with the module's own
weights; the cache is :class:`transformer_core.nn.gqa.KVCache`. Every step records the cache's length, the new
query row's weights and the largest difference between the cached logits and a full recomputation.

Shape legend: batch, head, query_pos, key_pos, d_head; pos, vocab, d_model.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..models.causal import CausalLM
from ..nn.attention import attention_scores, mask_scores, masked_softmax
from ..nn.gqa import KVCache
from ..nn.masks import causal_mask


@dataclass(frozen=True)
class CacheStep:
    """One generation step: the token fed (``token`` at ``position``), the token chosen next (``next_token``), how many
    key rows the cache held after it (``cache_rows``: per layer, all equal), the new query's weights over every
    cached key ``[layer][head][key_pos]`` (plain lists), and ``max_abs_diff``: the largest
    ``|cached logits − recomputed logits|`` of this step (0 when not checked)."""

    position: int
    token: int
    next_token: int
    cache_rows: list[int]
    query_shape: tuple[int, ...]
    weights: list
    max_abs_diff: float


def causal_cached_forward(model: CausalLM, new_ids: torch.Tensor, cache: KVCache,
                          keep_weights: bool = False) -> tuple[torch.Tensor, list]:
    """Logits ``[batch, new, vocab]`` of ``new_ids`` ``[batch, new]`` (positions ``cache.length …``), keys and values
    appended to ``cache``; advances ``cache.length``. Also each layer's weights ``[batch, head, new, key_pos]`` when
    ``keep_weights``.

    The same computation as :meth:`CausalLM.forward` on the whole sequence, row by row: the new tokens' queries
    against every key so far, under the causal mask when more than one token is new.

    Raises:
        ValueError: the sequence would pass ``max_positions``.
    """
    past, n_new = cache.length, new_ids.size(1)
    if past + n_new > model.config.max_positions:
        raise ValueError(f"the causal model takes at most {model.config.max_positions} tokens, got {past + n_new}")
    x = model.token_embedding(new_ids) + model.position_embedding(torch.arange(past, past + n_new))
    mask = causal_mask(n_new, past + n_new)[None, None] if n_new > 1 else None  # one new row sees every key
    all_weights = []
    for i, layer in enumerate(model.layers):
        mha = layer.attention
        q = mha._split_heads(mha.W_Q(x))  # [batch, head, new, d_head]
        k, v = cache.append(i, mha._split_heads(mha.W_K(x)), mha._split_heads(mha.W_V(x)))  # [batch, head, past+new, d_head]
        weights = masked_softmax(mask_scores(attention_scores(q, k), mask), mask)  # [batch, head, new, past+new]
        context = torch.matmul(weights, v.float())
        concat = context.transpose(1, 2).reshape(x.size(0), n_new, mha.d_model)
        x = mha.norm(x + mha.W_O(concat))
        if keep_weights:
            all_weights.append(weights)
    cache.length = past + n_new
    return model.unembed(x), all_weights


def generate_causal(model: CausalLM, prompt: list[int], n_new: int, *, check: bool = True) -> dict:
    """Greedy generation of ``n_new`` tokens after ``prompt`` with a KV cache; with ``check``, every step's logits
    are compared with ``model(whole prefix)[:, -1]``.

    Returns ``{"tokens": prompt + generated, "steps": [CacheStep per generated token], "prefill_rows": len(prompt),
    "max_abs_diff": the largest difference over all steps}``.

    Raises:
        ValueError: an empty prompt, or more tokens than ``max_positions``.
    """
    if not prompt:
        raise ValueError("the prompt needs at least one token")
    if len(prompt) + n_new > model.config.max_positions + 1:
        raise ValueError(f"prompt + new tokens must fit in {model.config.max_positions} positions")
    cache = KVCache(model.config.n_layers)
    tokens = list(prompt)
    steps = []
    with torch.no_grad():
        logits, weights = causal_cached_forward(model, torch.tensor([prompt]), cache, keep_weights=True)
        last = logits[0, -1]
        for step in range(n_new):
            next_token = int(last.argmax())
            diff = 0.0
            if check:
                full = model(torch.tensor([tokens]))[0, -1]
                diff = float((full - last).abs().max())
            steps.append(CacheStep(position=len(tokens) - 1, token=tokens[-1], next_token=next_token,
                                   cache_rows=[int(k.size(2)) for k in cache.keys],
                                   query_shape=(1, model.config.n_heads, 1, model.config.d_model // model.config.n_heads),
                                   weights=[w[0, :, -1].tolist() for w in weights], max_abs_diff=diff))
            tokens.append(next_token)
            if step == n_new - 1 or len(tokens) > model.config.max_positions:
                break
            logits, weights = causal_cached_forward(model, torch.tensor([[next_token]]), cache, keep_weights=True)
            last = logits[0, -1]
    return {"tokens": tokens, "steps": steps, "prefill_rows": len(prompt),
            "max_abs_diff": max((s.max_abs_diff for s in steps), default=0.0)}


def generate_smollm2(model, prompt: list[int], n_new: int, *, check: bool = True, layer: int = 0) -> dict:
    """Greedy generation with SmolLM2 (:func:`transformer_core.models.smollm2.load_smollm2`) and its
    :class:`~transformer_core.nn.gqa.KVCache`, recorded as :func:`generate_causal` does: per step the cache's rows
    (per layer), the new query's shape and its weights in ``layer`` (``[head][key_pos]``), and with ``check`` the
    largest difference between the step's cached logits and the same position's logits recomputed without a cache.

    The recomputation is one run over the whole generated sequence: under the causal mask row ``t`` of it is what a
    run over the prefix ``0 … t`` gives, so one run checks every step (32 separate prefix runs take 30 times longer).

    Returns ``{"tokens", "steps", "prefill_rows", "max_abs_diff", "kv_shape": [batch, kv_head, rows, d_head] of the
    cache at the end}``.

    Raises:
        ValueError: an empty prompt, or more positions than the model takes.
    """
    from ..nn.hooks import capture

    if not prompt:
        raise ValueError("the prompt needs at least one token")
    config = model.config
    cache = KVCache(config.n_layers)
    tokens, cached, weights, rows = list(prompt), [], [], []
    wanted = f"layers.{layer}.attention.weights"
    # one capture around the loop (each step's forward overwrites the last one's stage): opening it walks the model
    with torch.no_grad(), capture(model, only=lambda name: name == wanted) as stages:
        new = list(prompt)
        for _ in range(n_new):
            cached.append(model(torch.tensor([new]), cache, last_only=True)[0, -1])
            weights.append(stages[wanted][0, :, -1].tolist())
            rows.append([int(k.size(2)) for k in cache.keys])
            tokens.append(int(cached[-1].argmax()))
            new = [tokens[-1]]
    diffs = [0.0] * len(cached)
    if check and cached:
        with torch.no_grad():
            full = model(torch.tensor([tokens[:-1]]))[0, len(prompt) - 1:]  # [n_new, vocab]
        diffs = (full - torch.stack(cached)).abs().amax(dim=-1).tolist()
    steps = [CacheStep(position=len(prompt) - 1 + i, token=tokens[len(prompt) - 1 + i], next_token=tokens[len(prompt) + i],
                       cache_rows=rows[i], query_shape=(1, config.n_heads, 1, config.d_head),
                       weights=weights[i], max_abs_diff=diffs[i]) for i in range(len(cached))]
    return {"tokens": tokens, "steps": steps, "prefill_rows": len(prompt), "max_abs_diff": max(diffs, default=0.0),
            "kv_shape": list(cache.keys[0].shape) if cache.keys[0] is not None else []}


def timed_greedy(model, prompt: list[int], n_new: int) -> dict:
    """Greedy generation of ``n_new`` tokens twice, timed (``time.perf_counter``): with the KV cache (the prompt's
    keys and values computed once, then one new row a step) and without (each step runs ``model`` over the whole
    sequence so far). ``model`` is the causal model or SmolLM2.

    Returns ``{"cached": s, "uncached": s}`` (seconds per generated token, the prompt's first pass included in the
    cached time), ``"n": n_new``, ``"same"``: both chose the same tokens.
    """
    import time

    with torch.no_grad():
        start = time.perf_counter()
        if isinstance(model, CausalLM):
            cache = KVCache(model.config.n_layers)
            last, cached = causal_cached_forward(model, torch.tensor([prompt]), cache)[0][0, -1], []
            for _ in range(n_new):
                cached.append(int(last.argmax()))
                last = causal_cached_forward(model, torch.tensor([[cached[-1]]]), cache)[0][0, -1]
        else:
            cache = KVCache(model.config.n_layers)
            new, cached = list(prompt), []
            for _ in range(n_new):
                cached.append(int(model(torch.tensor([new]), cache, last_only=True)[0, -1].argmax()))
                new = [cached[-1]]
        with_cache = time.perf_counter() - start
        start = time.perf_counter()
        tokens = list(prompt)
        for _ in range(n_new):
            tokens.append(int(model(torch.tensor([tokens]))[0, -1].argmax()))
        without = time.perf_counter() - start
    return {"cached": with_cache / n_new, "uncached": without / n_new, "n": n_new, "same": tokens[len(prompt):] == cached}

