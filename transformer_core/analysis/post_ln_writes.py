"""What the heads of a post-norm decoder write: the logit lens and direct logit attribution of the trained causal
model (:mod:`transformer_core.models.causal`), from one captured run.

The causal model puts its LayerNorm *after* each residual addition (``x_{l+1} = LN_l(x_l + W_O·concat_l)``, as the
2017 Transformer) and unembeds ``x_L`` directly. So its residual stream is not a plain sum of what the heads wrote, as
in a pre-norm LLaMA (:mod:`.logit_attribution`): every later norm centres and rescales it. With each norm's scale
``σ_l`` *frozen* from the clean run, a norm is linear, ``L_l(v) = γ_l ⊙ (v − mean(v)) / σ_l``, and the logit of a
token is an exact sum over the parts that entered the stream: the embeddings, every head's output (its context
through its slice of W_O), W_O's biases and the norms' biases, each carried through every later norm. This is
TransformerLens's ``logit_attrs`` with ``apply_ln_to_stack`` generalised to norms inside the stream (a *variant*:
for a post-norm model TransformerLens folds only the final norm). A layer-0 head's share here is its direct path,
through layer 1's skip connection and norm; what it does by changing layer 1's attention (K-composition, which an
induction head relies on) is not in it.

The target at position ``p`` is the token that actually comes next, ``ids[p + 1]``, and the logit is taken relative
to the mean over the vocabulary (``W_U[t] − mean_v W_U[v]``, bias likewise): softmax ignores that mean, so a part
that raises every logit alike scores 0.

Shape legend: row (n_layers + 1), layer, head, pos (positions 0 … n − 2, each predicting the next token), d_model.
"""
from __future__ import annotations

import numpy as np
import torch


def stream(model, trace) -> np.ndarray:
    """The residual stream of ``trace`` (batch 1): float32 ``[n_layers + 1, pos, d_model]``, row 0 the embeddings
    (token + position, recomputed from the ids: no model run), row ``l + 1`` layer ``l``'s output."""
    ids = torch.tensor([int(t) for t in trace.tokens[0]])
    with torch.no_grad():
        x0 = model.token_embedding(ids) + model.position_embedding(torch.arange(len(ids)))
    rows = [x0.numpy()] + [trace.stage("output", layer)[0] for layer in range(model.config.n_layers)]
    return np.stack(rows).astype(np.float32)


def logit_lens(model, trace) -> dict:
    """Each row of :func:`stream` through the unembedding (the model has no final norm: its last row *is* its
    output). Returns ``{"target_prob": float32 [row, pos]`` (the probability of the token that comes next),
    ``"top_ids": int [row, pos]`` (each cell's most likely token)``}``.

    Raises:
        ValueError: fewer than two tokens (nothing comes next).
    """
    ids = [int(t) for t in trace.tokens[0]]
    if len(ids) < 2:
        raise ValueError("the sequence has one token, so no position has a next token")
    rows = torch.from_numpy(stream(model, trace)[:, :-1])  # [row, pos, d_model]
    with torch.no_grad():
        probs = torch.softmax(model.unembed(rows), dim=-1)  # [row, pos, vocab]
    nxt = torch.tensor(ids[1:])
    return {"target_prob": probs.gather(-1, nxt.expand(len(rows), -1)[..., None])[..., 0].numpy(),
            "top_ids": probs.argmax(-1).numpy()}


def direct_logit_attribution(model, trace) -> dict:
    """Every part's direct share of the logit of the next token (relative to the mean logit), at every position,
    every norm's scale frozen from ``trace``'s run.

    Returns float64 ``{"heads": [pos, layer, head], "embed": [pos], "biases": [pos]`` (W_O's and the norms' biases,
    and the unembedding's), ``"total": [pos]`` (their sum), ``"logit_diff": [pos]`` (the model's own logit of the
    next token minus its mean logit, from the captured logits)``}``; ``total`` equals ``logit_diff`` to float rounding
    (tests/test_post_ln_writes.py).

    Raises:
        ValueError: fewer than two tokens.
    """
    ids = [int(t) for t in trace.tokens[0]]
    if len(ids) < 2:
        raise ValueError("the sequence has one token, so no position has a next token")
    n, n_layers, n_heads = len(ids) - 1, model.config.n_layers, model.config.n_heads
    x = torch.from_numpy(stream(model, trace)[:, :-1]).double()  # [row, pos, d_model]
    w_u, b_u = model.unembed.weight.double(), model.unembed.bias.double()
    nxt = torch.tensor(ids[1:])
    direction = w_u[nxt] - w_u.mean(0)  # [pos, d_model]: logit of the next token minus the mean logit
    offset = b_u[nxt] - b_u.mean()  # [pos]

    with torch.no_grad():
        layers = [model.layers[layer].attention for layer in range(n_layers)]
        sums = [x[layer] + torch.tensor(trace.stage("projected", layer)[0, :-1], dtype=torch.float64)
                for layer in range(n_layers)]  # what each norm reads: [pos, d_model]
        sigma = [torch.sqrt(z.var(-1, unbiased=False, keepdim=True) + att.norm.eps) for z, att in zip(sums, layers)]

        def carried(v: torch.Tensor, layer: int) -> torch.Tensor:
            """``v`` (entering the stream before norm ``layer``) through that norm and every later one, frozen, then
            onto the direction: [pos] (v [pos, d_model] or [pos, head, d_model] → [pos, head])."""
            for later in range(layer, n_layers):
                gamma = layers[later].norm.weight.double()
                s = sigma[later] if v.ndim == 2 else sigma[later][:, None]
                v = gamma * (v - v.mean(-1, keepdim=True)) / s
            return (v * (direction if v.ndim == 2 else direction[:, None])).sum(-1)

        heads = torch.zeros(n, n_layers, n_heads, dtype=torch.float64)
        biases = offset.clone()
        for layer, att in enumerate(layers):
            d_head = att.d_model // n_heads
            ctx = torch.tensor(trace.stage("context", layer)[0, :, :-1], dtype=torch.float64)  # [head, pos, d_head]
            w_o = att.W_O.weight.double().view(att.d_model, n_heads, d_head)  # [d_model, head, d_head]
            per_head = torch.einsum("hpd,mhd->phm", ctx, w_o)  # [pos, head, d_model]
            heads[:, layer] = carried(per_head, layer)
            biases += carried(att.W_O.bias.double().expand(n, -1), layer)
            if layer + 1 < n_layers:  # the norm's own bias enters the stream the next norm reads
                biases += carried(att.norm.bias.double().expand(n, -1), layer + 1)
            else:
                biases += (att.norm.bias.double() * direction).sum(-1)
        embed = carried(x[0], 0)
        logits = torch.tensor(trace.stages["logits"][0, :-1], dtype=torch.float64)  # [pos, vocab]
        own = logits.gather(-1, nxt[:, None])[:, 0] - logits.mean(-1)
    total = heads.sum((1, 2)) + embed + biases
    return {"heads": heads.numpy(), "embed": embed.numpy(), "biases": biases.numpy(), "total": total.numpy(),
            "logit_diff": own.numpy()}
