"""Information-flow routes: which earlier tokens, through which heads and MLPs, a representation is built from.

Ferrando & Voita, "Information Flow Routes: Automatically Interpreting Language Models at Scale" (2024), as the LLM
Transparency Tool (Meta, 2024) draws them. A block of a pre-norm decoder adds to the residual stream:

* its attention: at query position ``i`` the stream after attention is ``resid_mid[i] = resid_pre[i] + Σ_{h, j}
  c[h, i, j]``, where ``c[h, i, j] = weights[h, i, j] · (v[h, j] · W_O[:, h·d_head:(h+1)·d_head]ᵀ)`` is what head
  ``h`` moves from token ``j`` (exact without a bias in W_O; a checkpoint with ``attention_bias`` adds ``b_O`` too,
  which, as in the tool, whose ``decomposed_attn`` holds the heads' moves only, is not a part: it is in the sum the
  parts are measured against, and in the ``gap`` check of :func:`contribution_tables`);
* its MLP: ``resid_post[i] = resid_mid[i] + mlp_out[i]``.

The *contribution* of a part ``c`` to the sum ``y`` it belongs to is its proximity ``max(0, ‖y‖₁ − ‖y − c‖₁)``,
divided by the sum of all the parts' proximities (the residual counted as a part), so a representation's
contributions sum to 1. A part close to the whole contributes much; a part that adds little, or points away, little.

The graph's nodes are residual-stream states: ``("x", l, i)`` enters block ``l`` at position ``i`` (``l = 0``: the
embeddings; ``l = n_layers``: the stream the final norm reads), ``("a", l, i)`` is after block ``l``'s attention,
``("m", l, i)`` is block ``l``'s MLP. Edges run upwards: ``x(l, j) → a(l, i)`` (attention, its weight the sum over
heads of their kept contributions, with the residual's when ``j = i``), ``a(l, i) → m(l, i) → x(l + 1, i)`` (the
MLP) and ``a(l, i) → x(l + 1, i)`` (the residual). As the tool's default ("Renormalize after threshold"), every
part under the threshold is dropped and a representation's kept parts are scaled to sum to 1 again; the route of a
token is then every kept edge that leads into its last representation (its tree, searched downwards).

This computes per query position (``[head, key_pos, d_model]`` at a time, in chunks), never the whole
``pos² × head × d_model`` tensor; what it keeps is ``[layer, query_pos, key_pos, head]`` floats (18 MB for 30 layers
× 9 heads at 128 tokens).

Shape legend: layer, head, q (query position), k (key position), d_head, d_model.
"""
from __future__ import annotations

import networkx as nx
import numpy as np
import torch

DEFAULT_THRESHOLD = 0.04  # the LLM Transparency Tool's default contribution threshold


def _proximity(whole: torch.Tensor, parts: torch.Tensor) -> torch.Tensor:
    """``max(0, ‖whole‖₁ − ‖whole − part‖₁)`` over the last axis; ``whole`` broadcasts against ``parts``."""
    return (whole.abs().sum(-1) - (whole - parts).abs().sum(-1)).clamp(min=0.0)


def head_writes(values: np.ndarray, w_o: np.ndarray) -> torch.Tensor:
    """What each head would write from each token with weight 1: ``v[h, j] · W_O_hᵀ``, float32
    ``[head, k, d_model]`` from ``values`` ``[head, k, d_head]`` (keys' values, repeated per query head under
    grouped-query attention) and ``w_o`` ``[d_model, head · d_head]`` (the output projection's weight).

    Raises:
        ValueError: the shapes do not fit.
    """
    values, w_o = torch.as_tensor(np.array(values, np.float32)), torch.as_tensor(np.array(w_o, np.float32))
    n_heads, _k, d_head = values.shape
    if w_o.ndim != 2 or w_o.shape[1] != n_heads * d_head:
        raise ValueError(f"w_o must be [d_model, {n_heads * d_head}], got shape {tuple(w_o.shape)}")
    per_head = w_o.view(w_o.shape[0], n_heads, d_head).permute(1, 2, 0)  # [head, d_head, d_model]
    return torch.einsum("hkd,hdm->hkm", values, per_head)


def attention_contributions(weights: np.ndarray, writes: torch.Tensor, resid_pre: np.ndarray, resid_mid: np.ndarray,
                            chunk: int = 8, causal: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Contributions to the stream after one block's attention, at every query position.

    ``weights`` ``[head, q, k]`` (the attention weights), ``writes`` ``[head, k, d_model]`` (:func:`head_writes`),
    ``resid_pre`` and ``resid_mid`` ``[q, d_model]`` (the stream entering the block and after its attention).

    Returns ``(heads, residual)``: float32 ``[q, k, head]`` (head ``h`` moving token ``k`` into position ``q``) and
    ``[q]`` (the residual ``resid_pre[q]``); for each ``q`` they sum to 1. Keys a query cannot see (weight 0)
    contribute 0; with ``causal`` (a decoder's mask, query ``q`` sees keys ``0 … q``) the later keys are not even
    computed. ``chunk`` query positions are held at a time (``chunk × head × k × d_model`` floats).
    """
    weights = torch.as_tensor(np.array(weights, np.float32))
    pre = torch.as_tensor(np.array(resid_pre, np.float32))
    mid = torch.as_tensor(np.array(resid_mid, np.float32))
    n_heads, n, n_keys = weights.shape
    heads = np.zeros((n, n_keys, n_heads), np.float32)
    residual = np.zeros(n, np.float32)
    with torch.no_grad():
        for start in range(0, n, chunk):
            rows = slice(start, min(start + chunk, n))
            whole = mid[rows]  # [c, d_model]
            # a causal query sees keys up to itself only: the keys after the chunk's last query are left out
            keys = slice(0, min(rows.stop, n_keys)) if causal else slice(0, n_keys)
            parts = weights[:, rows, keys, None] * writes[:, None, keys]  # [head, c, k, d_model]
            near = _proximity(whole[None, :, None], parts)  # [head, c, k]
            near_res = _proximity(whole, pre[rows])  # [c]
            total = near.sum(dim=(0, 2)) + near_res
            total = torch.where(total > 0, total, torch.ones_like(total))  # nothing near: every part 0
            heads[rows, keys] = (near / total[None, :, None]).permute(1, 2, 0).numpy()
            residual[rows] = (near_res / total).numpy()
    return heads, residual


def mlp_contributions(resid_mid: np.ndarray, mlp_out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Contributions to the stream after one block's MLP, ``resid_mid + mlp_out`` (both ``[q, d_model]``):
    ``(mlp, residual)``, float32 ``[q]`` each, summing to 1."""
    mid = torch.as_tensor(np.array(resid_mid, np.float32))
    out = torch.as_tensor(np.array(mlp_out, np.float32))
    whole = mid + out
    near_mlp, near_res = _proximity(whole, out), _proximity(whole, mid)
    total = near_mlp + near_res
    total = torch.where(total > 0, total, torch.ones_like(total))
    return (near_mlp / total).numpy(), (near_res / total).numpy()


def renormalized(parts: np.ndarray, residual: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Drop every contribution at or under ``threshold`` and scale each representation's kept ones to sum to 1.
    ``parts`` ``[q, …]`` (any trailing axes), ``residual`` ``[q]``."""
    parts = np.where(parts > threshold, parts, 0.0)
    residual = np.where(residual > threshold, residual, 0.0)
    total = residual + parts.reshape(len(parts), -1).sum(axis=1)
    safe = np.where(total > 0, total, 1.0)
    return parts / safe.reshape((-1,) + (1,) * (parts.ndim - 1)), residual / safe


def route_graph(attn: np.ndarray, attn_residual: np.ndarray, mlp: np.ndarray, mlp_residual: np.ndarray,
                position: int, threshold: float = DEFAULT_THRESHOLD) -> nx.DiGraph:
    """The route into the last representation of ``position``: a ``networkx.DiGraph`` of the kept edges.

    ``attn`` float ``[layer, q, k, head]``, ``attn_residual``, ``mlp``, ``mlp_residual`` ``[layer, q]`` (from
    :func:`attention_contributions` and :func:`mlp_contributions`, layer by layer). Nodes are named as the module
    docstring says; each edge has ``weight`` (its renormalized contribution) and ``kind`` (``"attention"``,
    ``"residual"`` or ``"mlp"``); an attention edge also has ``heads`` ``{head: contribution}`` (its kept heads) and
    ``residual`` (the residual's share, when the edge is a position's own).

    Raises:
        ValueError: ``position`` or ``threshold`` out of range, or the arrays' shapes differ.
    """
    n_layers, n = attn.shape[:2]
    if attn_residual.shape != (n_layers, n) or mlp.shape != (n_layers, n) or mlp_residual.shape != (n_layers, n):
        raise ValueError("attn_residual, mlp and mlp_residual must be [layer, q] as attn's first two axes")
    if not 0 <= int(position) < n:
        raise ValueError(f"position must be in [0, {n - 1}], got {position!r}")
    if not 0.0 <= float(threshold) < 1.0:
        raise ValueError(f"threshold must be in [0, 1), got {threshold!r}")
    graph = nx.DiGraph()
    top = ("x", n_layers, int(position))
    graph.add_node(top)
    reached = {int(position)}  # positions whose stream after block l is on the route, from the top down
    for layer in range(n_layers - 1, -1, -1):
        mlp_kept, res_kept = renormalized(mlp[layer], mlp_residual[layer], threshold)
        after_attention = set()
        for i in sorted(reached):
            if mlp_kept[i] > 0:
                graph.add_edge(("a", layer, i), ("m", layer, i), weight=float(mlp_kept[i]), kind="mlp")
                graph.add_edge(("m", layer, i), ("x", layer + 1, i), weight=float(mlp_kept[i]), kind="mlp")
                after_attention.add(i)
            if res_kept[i] > 0:
                graph.add_edge(("a", layer, i), ("x", layer + 1, i), weight=float(res_kept[i]), kind="residual")
                after_attention.add(i)
        heads_kept, self_kept = renormalized(attn[layer], attn_residual[layer], threshold)
        reached = set()
        for i in sorted(after_attention):
            for j in np.flatnonzero(heads_kept[i].sum(axis=1) > 0).tolist() + ([i] if self_kept[i] > 0 else []):
                shares = {int(h): float(heads_kept[i, j, h]) for h in np.flatnonzero(heads_kept[i, j] > 0)}
                own = float(self_kept[i]) if j == i else 0.0
                node = ("x", layer, j)
                edge = graph.get_edge_data(node, ("a", layer, i))
                if edge is None:
                    graph.add_edge(node, ("a", layer, i), weight=sum(shares.values()) + own,
                                   kind="attention" if shares else "residual", heads=shares, residual=own)
                reached.add(j)
    return graph


def edge_rows(graph: nx.DiGraph) -> list[dict]:
    """The graph's edges as plain rows for a table or a JSON file: ``{"block": "attention"|"mlp"`` (which half of
    the block the edge enters), ``"kind"`` (``"attention"``, ``"residual"`` or ``"mlp"``), ``"layer"``, ``"from"``,
    ``"to"`` (positions), ``"weight"``, ``"heads": {head: contribution}``, ``"residual"``: the residual's share in
    it (an attention edge from a position to itself holds both)``}``; an MLP is its one ``a → m`` row. Sorted by
    layer (top first), the attention half first, then weight."""
    rows = []
    for (kind_u, layer, j), (kind_v, _layer, i), data in graph.edges(data=True):
        if kind_u == "m":  # the MLP's second half: its row is the a → m edge
            continue
        kind = "mlp" if kind_v == "m" else data["kind"]
        block = "attention" if kind_v == "a" else "mlp"
        own = data.get("residual", data["weight"] if kind == "residual" else 0.0)
        rows.append({"block": block, "kind": kind, "layer": int(layer), "from": int(j), "to": int(i),
                     "weight": float(data["weight"]), "heads": dict(data.get("heads", {})), "residual": float(own)})
    rows.sort(key=lambda r: (-r["layer"], r["block"] != "attention", -r["weight"]))
    return rows


def contribution_tables(n_layers: int, block, w_o, stream: np.ndarray, b_o=None) -> dict:
    """Every block's contributions, for :func:`route_graph`, from a model's per-block stages.

    ``stream`` float32 ``[n_layers + 1, pos, d_model]``: the residual stream entering each block, then the one the
    final norm reads. ``block(layer)`` returns that block's ``(weights [head, q, k], values [head, k, d_head],
    resid_mid [q, d_model], mlp_out [q, d_model])``; ``w_o(layer)`` its output projection ``[d_model, head ·
    d_head]``; ``b_o(layer)`` its bias ``[d_model]`` or ``None`` (``b_o=None``: no layer has one). Returns ``{"attn":
    float32 [layer, q, k, head], "attn_residual", "mlp", "mlp_residual": [layer, q], "gap": the largest
    |resid_pre + Σ parts + b_O − resid_mid| and |resid_mid + mlp_out − resid_post| seen}`` (the decomposition's own
    check: a few 1e-5 in float32).
    """
    n = stream.shape[1]
    attn, attn_res = None, np.zeros((n_layers, n), np.float32)
    mlp, mlp_res = np.zeros((n_layers, n), np.float32), np.zeros((n_layers, n), np.float32)
    gap = 0.0
    for layer in range(n_layers):
        weights, values, mid, out = block(layer)
        writes = head_writes(values, w_o(layer))
        if attn is None:
            attn = np.zeros((n_layers, n, n, weights.shape[0]), np.float32)
        moved = torch.einsum("hqk,hkm->qm", torch.as_tensor(np.array(weights, np.float32)), writes).numpy()
        bias = None if b_o is None else b_o(layer)
        if bias is not None:
            moved = moved + np.asarray(bias, np.float32)
        gap = max(gap, float(np.abs(stream[layer] + moved - mid).max()),
                  float(np.abs(mid + out - stream[layer + 1]).max()))
        attn[layer], attn_res[layer] = attention_contributions(weights, writes, stream[layer], mid)
        mlp[layer], mlp_res[layer] = mlp_contributions(mid, out)
    return {"attn": attn, "attn_residual": attn_res, "mlp": mlp, "mlp_residual": mlp_res, "gap": gap}


def decoder_tables(model, stream: np.ndarray, checkpoint=None) -> dict:
    """:func:`contribution_tables` of SmolLM2 (or a local LLaMA-family ``checkpoint``, whose module is ``model``) from
    the residual stream a run kept (``run_smollm2(residuals=True)["stream"]``): each block recomputed once alone."""
    from ..models.smollm2_trace import route_block

    def b_o(layer):
        bias = model.layers[layer].attention.W_O.bias
        return None if bias is None else bias.detach().numpy()

    return contribution_tables(stream.shape[0] - 1, lambda layer: route_block(stream[layer], layer, checkpoint),
                               lambda layer: model.layers[layer].attention.W_O.weight.detach().numpy(), stream, b_o)
