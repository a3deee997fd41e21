"""Which input tokens reach the output after every layer: attention rollout and attention flow.

Abnar & Zuidema, "Quantifying Attention Flow in Transformers" (ACL 2020), §3. Each layer's
attention is averaged over heads and the residual connection is added as an identity:

    Â_l = rownorm(0.5 · mean_h(A_l) + 0.5 · I)

* **rollout**: R = Â_L ⋯ Â_2 Â_1 — row i is output position i after the last layer, column j
  input token j; every row sums to 1;
* **flow** (default, as Abnar & Zuidema's code and figures): F[i, j] = the maximum flow from input
  token j to output position i through the layered graph whose edge (layer l−1, position j) →
  (layer l, position i) has capacity Â_l[i, j] (``networkx``), then each row divided by its sum,
  as ``attention_graph_util.compute_flows`` does (``flow_values[u] /= flow_values[u].sum()``):
  a share, every row sums to 1;
* **raw flow** (``normalise=False``, :data:`FLOW_KINDS` ``"flow_raw"``): the maximum flows themselves,
  in the units of the edge capacities (an Â row sums to 1). Each value is at most 1, but a row is
  not a distribution: the flows from different inputs share edges, so a row sums to more than 1
  (3.5–13.4 on MiniLM sentences of 8–16 tokens).

Flow solves n² maximum-flow problems on a graph of L·n² edges, so its time grows with n⁴:
:data:`FLOW_TOKEN_LIMIT` is the longest sentence it is computed for (measured in
``benchmarks/bench_moves.py``).

Shape legend: layer, query_pos (output position), key_pos (input token). Only real positions
(``[CLS]`` and ``[SEP]`` included, ``[PAD]`` excluded) are used.
"""
from __future__ import annotations

import networkx as nx
import numpy as np

from ..records.trace import Trace

CSV_CORNER = "output \\ input"  # a CSV's corner cell: rows are output positions after the last layer, columns inputs
FLOW_KINDS = {  # view name → what its numbers are (English; one line each)
    "flow": "maximum flow, each row divided by its sum (Abnar & Zuidema's compute_flows): a share, rows sum to 1",
    "flow_raw": "maximum flow in the units of the edge capacities (an Â row sums to 1); rows sum to more than 1",
}
FLOW_TOKEN_LIMIT = 16  # tokens, [CLS] and [SEP] included: 256 max flows over 6 layers, ~2–4 s on 2 busy cores here


def layer_means(trace: Trace, batch: int = 0) -> np.ndarray:
    """mean_h(A_l) of every layer for the real positions of sentence ``batch``: ``[layer, n, n]`` float64,
    where n = ``trace.lengths[batch]``.

    Raises:
        KeyError: a layer has no ``weights`` stage.
    """
    n = trace.lengths[batch]
    return np.stack([np.asarray(trace.stage("weights", l)[batch, :, :n, :n], np.float64).mean(0)
                     for l in range(trace.n_layers)])


def residual_attention(mean_weights: np.ndarray) -> np.ndarray:
    """Â = rownorm(0.5·A + 0.5·I) for each ``[..., n, n]`` matrix A (rows with nothing stay the identity's).

    Rows are renormalised because keys were dropped ([PAD] with the padding mask off) or a row
    was empty; with full rows of weights the renormalisation changes nothing.
    """
    a = np.asarray(mean_weights, np.float64)
    n = a.shape[-1]
    mixed = 0.5 * np.nan_to_num(a) + 0.5 * np.eye(n)
    return mixed / mixed.sum(-1, keepdims=True)


def attention_rollout(mean_weights: np.ndarray) -> np.ndarray:
    """R = Â_L ⋯ Â_1 from ``mean_weights [layer, n, n]`` (layer 0 first): ``[n, n]``, rows sum to 1.

    Row i = output position i after the last layer, column j = input token j.
    """
    hats = residual_attention(mean_weights)
    out = np.eye(hats.shape[-1])
    for hat in hats:  # layer 0 first: R ← Â_l R
        out = hat @ out
    return out


def flow_graph(hats: np.ndarray) -> nx.DiGraph:
    """The layered graph of Abnar & Zuidema: nodes ``(layer, pos)`` for layers 0…L (0 = input tokens),
    edges ``(l−1, j) → (l, i)`` with ``capacity = Â_l[i, j]`` (zero-capacity edges left out)."""
    hats = np.asarray(hats, np.float64)
    n_layers, n = hats.shape[0], hats.shape[-1]
    graph = nx.DiGraph()
    graph.add_nodes_from((l, p) for l in range(n_layers + 1) for p in range(n))
    for l in range(1, n_layers + 1):
        rows, cols = np.nonzero(hats[l - 1] > 0)
        graph.add_edges_from(((l - 1, int(j)), (l, int(i)), {"capacity": float(hats[l - 1][i, j])})
                             for i, j in zip(rows, cols))
    return graph


def attention_flow(mean_weights: np.ndarray, *, normalise: bool = True,
                   limit: int | None = FLOW_TOKEN_LIMIT) -> np.ndarray:
    """Attention flow from each input token j to each output position i: ``[n, n]`` float64.

    ``mean_weights [layer, n, n]`` (layer 0 first) become capacities Â_l (:func:`residual_attention`);
    each value is the maximum flow from node ``(0, j)`` to ``(L, i)`` (networkx's shortest augmenting path,
    one residual network reused for all n² pairs). ``normalise=True`` (default) then divides each row by
    its sum, as Abnar & Zuidema's ``compute_flows`` and figures do (rows sum to 1); ``normalise=False``
    keeps the raw maximum flows, in capacity units.

    Raises:
        ValueError: more than ``limit`` tokens (``None``: no limit), or not ``[layer, n, n]``.
    """
    hats = residual_attention(mean_weights)
    if hats.ndim != 3 or hats.shape[1] != hats.shape[2]:
        raise ValueError(f"mean_weights must be [layer, n, n], got shape {hats.shape}")
    n_layers, n = hats.shape[0], hats.shape[-1]
    if limit is not None and n > limit:
        raise ValueError(f"attention flow is computed for at most {limit} tokens; this sentence has {n}")
    graph = flow_graph(hats)
    residual = None
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            residual = nx.algorithms.flow.shortest_augmenting_path(graph, (0, j), (n_layers, i), residual=residual)
            out[i, j] = residual.graph["flow_value"]
    if normalise:
        out = out / np.where(out.sum(-1, keepdims=True) > 0, out.sum(-1, keepdims=True), 1.0)
    return out
