"""What ablating heads of MiniLM-L6 does to its sentence embeddings and its later layers.

:func:`ablation_effects` runs the batch intact and with the chosen heads ablated
(:mod:`transformer_core.analysis.ablation`) and measures the cosine between the two sentence
embeddings (mean pooling over real tokens, then L2 normalisation, as all-MiniLM-L6-v2 is used), how
far each layer's output moved (relative L2 over real tokens), and which other sentence of the batch
becomes nearest. :func:`rank_heads` ablates each of the 72 heads alone and measures the same cosine,
one layer's 12 ablations per batched forward pass (each copy of the batch ablates a different head).

Shape legend: batch, head, query_pos, key_pos; pos, d_model (384).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import torch

from ..models.minilm import MINILM_CONFIG, load_minilm
from ..models.minilm_trace import run_minilm
from ..records.trace import Trace
from .ablation import Head, ablate, nearest_other, relative_change, sentence_embeddings

N_LAYERS, N_HEADS = MINILM_CONFIG.n_layers, MINILM_CONFIG.n_heads
RANK_BUDGET = 60_000_000  # attention numbers (copies × heads × pos²) per batched forward of rank_heads (~240 MB)


def inputs_of(trace: Trace, padding: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask, real)`` ``[batch, pos]`` of a MiniLM trace, from its WordPiece tokens.

    ``real`` (bool) marks real tokens; ``attention_mask`` is ``real`` with the padding mask on,
    all ones with it off (as :func:`~transformer_core.models.minilm_trace.run_minilm` runs the model).
    """
    _, tokenizer = load_minilm()
    ids = torch.tensor([[tokenizer.token_to_id(t) for t in row] for row in trace.tokens], dtype=torch.long)
    real = torch.arange(ids.shape[1])[None, :] < torch.tensor(trace.lengths)[:, None]
    return ids, (real.long() if padding else torch.ones_like(ids)), real


def _outputs(model, ids, attention_mask, layers_weights: Iterable[int]) -> tuple[list[torch.Tensor], dict]:
    """Every layer's output ``[batch, pos, d_model]`` and the weights of ``layers_weights``, of one forward."""
    from ..nn.hooks import capture

    wanted = {f"layers.{i}.attention.weights" for i in layers_weights}
    with torch.no_grad(), capture(model, only=lambda n: n.endswith("feed_forward.output") or n in wanted) as st:
        model(ids, attention_mask)
    return [st[f"layers.{i}.feed_forward.output"] for i in range(N_LAYERS)], \
        {i: st[f"layers.{i}.attention.weights"].numpy() for i in layers_weights}


def ablation_effects(sentences: list[str], heads: Iterable[Head], *, mode: str = "zero", padding: bool = True,
                     max_tokens: int = 128, weights_layer: int | None = None) -> dict:
    """MiniLM-L6 on ``sentences``, intact and with ``heads`` ablated (``mode`` "zero" or "mean").

    Returns plain NumPy/lists:
    ``trace`` (tokens and mask only), ``cosine`` ``[batch]`` (ablated vs intact sentence embedding),
    ``shift`` ``[layer, batch]`` (‖ablated − intact‖ / ‖intact‖ of each layer's output, real tokens),
    ``embedding`` and ``similarity`` (``{"intact", "ablated"}``: ``[batch, 384]``, ``[batch, batch]``),
    ``nearest`` (``{"intact", "ablated"}``: per sentence the index of the nearest other one, or None),
    ``weights`` (``{"intact", "ablated"}``: ``[batch, head, query_pos, key_pos]`` of ``weights_layer``, if given).

    Raises:
        ValueError: no token, a bad mode or max_tokens. PretrainedUnavailable: MiniLM is missing.
    """
    heads = tuple(heads)
    layers_w = () if weights_layer is None else (weights_layer,)
    trace = run_minilm(list(sentences), padding=padding, max_tokens=max_tokens, only=lambda name: False)
    model, _ = load_minilm()
    ids, attention_mask, real = inputs_of(trace, padding)
    intact, w_intact = _outputs(model, ids, attention_mask, layers_w)
    with ablate(model, heads, mode, real):
        ablated, w_ablated = _outputs(model, ids, attention_mask, layers_w)
    emb = {"intact": sentence_embeddings(intact[-1], real), "ablated": sentence_embeddings(ablated[-1], real)}
    return {
        "trace": Trace(tokens=trace.tokens, lengths=trace.lengths, truncated=trace.truncated, mask=trace.mask,
                       stages={}, settings={**trace.settings, "ablate": heads, "mode": mode}),
        "cosine": (emb["intact"] * emb["ablated"]).sum(-1).numpy(),
        "shift": np.stack([relative_change(a, i, real).numpy() for a, i in zip(ablated, intact)]),
        "embedding": {k: v.numpy() for k, v in emb.items()},
        "similarity": {k: (v @ v.T).numpy() for k, v in emb.items()},
        "nearest": {k: nearest_other(v) for k, v in emb.items()},
        "weights": {"intact": w_intact.get(weights_layer), "ablated": w_ablated.get(weights_layer)},
    }


def rank_heads(sentences: list[str], *, mode: str = "zero", padding: bool = True, max_tokens: int = 128,
               progress: Callable[[int, int], None] | None = None) -> dict:
    """Ablate each of the 72 heads alone; the cosine of every sentence's ablated vs intact embedding.

    One batched forward per group of heads of a layer (the batch repeated once per head, each copy
    ablating its own head; at most :data:`RANK_BUDGET` attention numbers per pass). ``progress(done,
    total)`` is called after each pass. Returns ``{"cosine": [layer, head, batch] float32, "trace":
    tokens-only Trace, "mode"}``; the effect of a head is ``1 − cosine``.

    Raises:
        ValueError: no token, a bad mode. PretrainedUnavailable: MiniLM is missing.
    """
    trace = run_minilm(list(sentences), padding=padding, max_tokens=max_tokens, only=lambda name: False)
    model, _ = load_minilm()
    ids, attention_mask, real = inputs_of(trace, padding)
    b, n = ids.shape
    intact, _ = _outputs(model, ids, attention_mask, ())
    base = sentence_embeddings(intact[-1], real)  # [batch, d_model]
    group = int(max(1, min(N_HEADS, RANK_BUDGET // max(1, b * N_HEADS * n * n))))
    passes = [(layer, list(range(h, min(N_HEADS, h + group)))) for layer in range(N_LAYERS)
              for h in range(0, N_HEADS, group)]
    cosine = np.zeros((N_LAYERS, N_HEADS, b), dtype=np.float32)
    for done, (layer, heads) in enumerate(passes, 1):
        k = len(heads)
        mask = torch.zeros(N_LAYERS, k * b, N_HEADS, dtype=torch.bool)
        for i, head in enumerate(heads):
            mask[layer, i * b:(i + 1) * b, head] = True  # copy i of the batch ablates this head
        tiled_real = real.repeat(k, 1)
        with torch.no_grad(), ablate(model, mask, mode, tiled_real):
            hidden = model(ids.repeat(k, 1), attention_mask.repeat(k, 1))  # [k·batch, pos, d_model]
        emb = sentence_embeddings(hidden, tiled_real).view(k, b, -1)
        cosine[layer, heads] = (emb * base[None]).sum(-1).numpy()
        if progress is not None:
            progress(done, len(passes))
    return {"cosine": cosine, "mode": mode,
            "trace": Trace(tokens=trace.tokens, lengths=trace.lengths, truncated=trace.truncated, mask=trace.mask,
                           stages={}, settings=trace.settings)}
