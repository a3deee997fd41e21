"""A :class:`~transformer_core.records.trace.Trace` of SmolLM2-135M: :func:`run_smollm2`, every head stage by stage.

Shape legend: batch (1), head (9), kv_head (3), query_pos, key_pos, d_head (64), d_model (576), vocab (49,152).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ..nn.hooks import capture
from ..records.trace import Trace
from ..text.tokenize import normalize_text
from .minilm import whole_number
from .smollm2 import MAX_TOKENS, encode, load_smollm2


def run_smollm2(text: str, *, max_tokens: int = 128, only: Callable[[str], bool] | None = None,
                top: int = 5, residuals: bool = False, checkpoint=None) -> tuple[Trace, dict]:
    """Run SmolLM2 on ``text`` (one sentence, no BOS, as its tokenizer encodes it) and capture every stage.

    ``checkpoint``: a local LLaMA-family :class:`~transformer_core.models.checkpoint.Checkpoint` to run instead
    (its tokenizer adds a BOS when the checkpoint's does; the sizes below are then its own, and
    ``trace.settings`` says ``"model": "local"`` with its ``"path"`` and ``"name"``).

    The text goes through :func:`~transformer_core.text.tokenize.normalize_text` (NFC, control characters
    shown), is encoded by the GGUF's byte-level BPE and cut to its first ``max_tokens`` tokens.

    Returns ``(trace, prediction)``:

    * ``trace.tokens[0]`` are readable labels (``"␣Mary"``, ``"我 (1/2)"``; the raw byte-level tokens are in
      ``trace.settings["raw_tokens"]``, the ids in ``settings["ids"]``); ``trace.mask`` the causal mask, bool
      ``[1, 1, query_pos, key_pos]``; ``trace.stages`` float32 arrays: ``embeddings`` ``[1, pos, 576]``,
      ``layers.{i}.attention.{q,k,v}`` ``[1, 9, pos, 64]`` (keys and values repeated per query head),
      ``…{k_kv,v_kv}`` ``[1, 3, pos, 64]``, ``…{scores,masked_scores,weights}`` ``[1, 9, query_pos, key_pos]``,
      ``…context`` ``[1, 9, pos, 64]``, ``…{input,concat,projected,output}`` ``[1, pos, 576]``,
      ``layers.{i}.feed_forward.{input,projected,output}`` ``[1, pos, 576]`` and ``{gate,up,hidden}``
      ``[1, pos, 1536]``, ``final_norm`` ``[1, pos, 576]``. ``only`` (a predicate on these names) keeps some.
    * ``prediction``: ``{"probs": [pos, vocab] float32 next-token probabilities at every position (T = 1),
      "top": [pos] lists of ``top`` ``(token label, id, probability)``, "last_logits": [vocab] float64 logits
      after the last token (for other temperatures), "n_total": tokens of the text before the cut}``; with
      ``residuals`` also ``"stream"``: float32 ``[n_layers + 1, pos, d_model]``, the residual stream entering each
      block and, last, the one the final norm reads (row ``i`` enters block ``i``: :func:`block_stages` recomputes
      one block from it; the logit lens reads every row), and ``"parts"``: what is written into the last position's
      stream (``"embed"``, ``"final"`` ``[d_model]``, ``"contexts"`` ``[layer, head, d_head]``, ``"mlps"``
      ``[layer, d_model]``) for direct logit attribution.

    Raises:
        ValueError: no token, or ``max_tokens`` not in 1…:data:`~transformer_core.models.smollm2.MAX_TOKENS`.
        SmolLM2Unavailable: the GGUF file is missing or corrupt.
    """
    model, tokenizer, special = _model_of(checkpoint)
    max_tokens = whole_number(max_tokens, "max_tokens", 1, min(MAX_TOKENS, model.config.max_positions))
    ids, raw, labels = encode(normalize_text(text), tokenizer, add_special_tokens=special)
    n_total = len(ids)
    if not ids:
        raise ValueError("no tokens: type at least one word")
    truncated = len(ids) > max_tokens
    ids, raw = ids[:max_tokens], raw[:max_tokens]
    labels = labels[:max_tokens] if not truncated else encode_labels(raw)
    n, n_layers = len(ids), model.config.n_layers
    rows = ["embeddings"] + [f"layers.{i}.feed_forward.output" for i in range(n_layers)]
    writes = [f"layers.{i}.{s}" for i in range(n_layers) for s in ("attention.context", "feed_forward.projected")]
    wanted = only
    if residuals:  # the residual stream and what each block writes, recorded beside what ``only`` asks for
        kept = set(rows) | set(writes)
        wanted = lambda name: name in kept or only is None or only(name)  # noqa: E731
    with torch.no_grad(), capture(model, wanted) as stages:
        logits = model(torch.tensor([ids]))  # [1, pos, vocab]
    if residuals:
        stream = np.stack([stages[name][0].numpy() for name in rows])  # [layer + 1, pos, d_model]
        parts = {"embed": stream[0, -1].copy(), "final": stream[-1, -1].copy(),
                 "contexts": np.stack([stages[f"layers.{i}.attention.context"][0, :, -1].numpy()
                                       for i in range(n_layers)]),  # [layer, head, d_head]
                 "mlps": np.stack([stages[f"layers.{i}.feed_forward.projected"][0, -1].numpy()
                                   for i in range(n_layers)])}  # [layer, d_model]
        if only is not None:
            stages = {name: t for name, t in stages.items() if only(name)}
    probs = torch.softmax(logits[0].float(), dim=-1)  # [pos, vocab]
    best = probs.topk(top, dim=-1)
    vocab_labels = lambda i: encode_labels([tokenizer.id_to_token(i)])[0]  # noqa: E731
    tops = [[(vocab_labels(int(i)), int(i), float(p)) for p, i in zip(best.values[j], best.indices[j])]
            for j in range(n)]
    config = model.config
    mask = np.tril(np.ones((n, n), dtype=bool))  # [query_pos, key_pos]
    windows = set(config.windows or (0,))
    if len(windows) == 1 and windows != {0}:  # one sliding window in every layer: the mask every head obeyed
        mask &= ~np.tril(mask, -windows.pop())
    names = {"model": "smollm2"} if checkpoint is None else \
        {"model": "local", "path": str(checkpoint.path), "name": checkpoint.name}
    trace = Trace(tokens=(tuple(labels),), lengths=(n,), truncated=(truncated,), mask=mask[None, None],
                  stages={name: t.numpy() for name, t in stages.items()},
                  settings={**names, "max_tokens": max_tokens, "d_model": config.d_model,
                            "n_heads": config.n_heads, "n_kv_heads": config.n_kv_heads, "n_layers": config.n_layers,
                            "causal": True, "ids": list(ids), "raw_tokens": list(raw)})
    prediction = {"probs": probs.numpy(), "top": tops, "last_logits": logits[0, -1].double().numpy(),
                  "n_total": n_total}
    if residuals:
        prediction["stream"], prediction["parts"] = stream, parts
    return trace, prediction


def _model_of(checkpoint):
    """``(model, tokenizer, add_special_tokens)`` of a checkpoint, or of SmolLM2 when it is ``None``."""
    if checkpoint is None:
        model, tokenizer = load_smollm2()
        return model, tokenizer, False
    return checkpoint.model, checkpoint.tokenizer, checkpoint.add_special_tokens


def block_stages(residual: np.ndarray, layer: int, only: Callable[[str], bool] | None = None,
                 checkpoint=None) -> dict[str, np.ndarray]:
    """The stages of SmolLM2's block ``layer`` alone, recomputed from ``residual``, the residual stream entering it
    (``[pos, d_model]`` float32, as :func:`run_smollm2` gives with ``residuals=True``).

    A block reads only the residual stream entering it (and the positions, 0 … pos − 1 for RoPE), so this gives the
    same numbers as capturing the block inside a whole run, at a thirtieth of its cost: a page keeps the residuals of
    one run and serves any layer from them.

    Returns ``{stage name: float32 array}`` named and shaped as in :func:`run_smollm2` (``layers.{layer}.…``).

    Raises:
        ValueError: ``layer`` outside 0 … n_layers − 1, or ``residual`` not ``[pos, d_model]``.
        SmolLM2Unavailable: the GGUF file is missing or corrupt.
    """
    from ..nn.gqa import rope_for

    model = _model_of(checkpoint)[0]
    layer = whole_number(layer, "layer", 0, model.config.n_layers - 1)
    if residual.ndim != 2 or residual.shape[1] != model.config.d_model or residual.shape[0] == 0:
        raise ValueError(f"residual must be [pos, {model.config.d_model}], got shape {tuple(residual.shape)}")
    x = torch.from_numpy(np.array(residual, np.float32))[None]  # [1, pos, d_model]; a writable copy for torch
    cos, sin = rope_for(model.config, 0, x.shape[1])
    prefix = f"layers.{layer}."
    with torch.no_grad(), capture(model, lambda n: n.startswith(prefix) and (only is None or only(n))) as stages:
        model.layers[layer](x, cos, sin, None, layer)
    return {name: t.numpy() for name, t in stages.items()}


def encode_labels(raw_tokens: list[str]) -> list[str]:
    """Readable labels of byte-level tokens (:func:`~transformer_core.text.byte_bpe.token_labels`)."""
    from ..text.byte_bpe import token_labels

    return token_labels(list(raw_tokens))


def route_block(residual: np.ndarray, layer: int, checkpoint=None) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                             np.ndarray]:
    """What :func:`~transformer_core.analysis.routes.contribution_tables` reads of SmolLM2's block ``layer`` (or a
    local ``checkpoint``'s), recomputed from ``residual`` (the stream entering it, ``[pos, d_model]``): ``(weights
    [head, q, k], values [head, k, d_head] (repeated per query head), resid_mid [q, d_model], mlp_out [q,
    d_model])``, float32."""
    names = ("attention.weights", "attention.v", "attention.output", "feed_forward.projected")
    stages = block_stages(residual, layer, only=lambda n: n.endswith(names), checkpoint=checkpoint)
    return tuple(stages[f"layers.{layer}.{name}"][0] for name in names)
