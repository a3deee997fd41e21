"""Attention flow against Abnar & Zuidema's own code.

The reference below is written from their repository's ``attention_graph_util.py``: ``get_adjmat`` builds one
adjacency matrix over (layer + 1) · length nodes whose edge from node (layer i, position k_f) to (layer i − 1,
position k_t) has capacity ``mat[i − 1][k_f][k_t]`` (the residual-mixed attention ``res_att_mat``), the graph is
``networkx.from_numpy_array(adj, create_using=DiGraph)`` with those weights as ``capacity``, and
``compute_flows`` takes for every output node u and input node v ``nx.maximum_flow_value(G, u, v,
flow_func=edmonds_karp)``, then divides the row by its sum (``flow_values[u] /= flow_values[u].sum()``): that is
what their figures show. The page and the export used the raw flows (rows summing to 3.5–13.4) under a colour bar
titled "share"; on the old code the default-flow tests here fail.
"""
from __future__ import annotations

import io

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from transformer_core.analysis.rollout import attention_flow, layer_means


def res_att_mat(mean_weights: np.ndarray) -> np.ndarray:
    """Their notebook: ``att_mat`` averaged over heads, plus the identity, rows renormalised."""
    res = mean_weights + np.eye(mean_weights.shape[-1])[None]
    return res / res.sum(axis=-1)[..., None]


def compute_flows_reference(mean_weights: np.ndarray, *, normalise: bool = True) -> np.ndarray:
    """``[n, n]``: the last layer's rows of ``compute_flows`` (output position i, input token j)."""
    mat = res_att_mat(np.asarray(mean_weights, np.float64))
    n_layers, length, _ = mat.shape
    size = (n_layers + 1) * length
    adj = np.zeros((size, size))
    for i in range(1, n_layers + 1):  # get_adjmat
        for k_f in range(length):
            for k_t in range(length):
                adj[i * length + k_f][(i - 1) * length + k_t] = mat[i - 1][k_f][k_t]
    graph = nx.from_numpy_array(adj, create_using=nx.DiGraph())
    nx.set_edge_attributes(graph, {(u, v): adj[u, v] for u, v in graph.edges}, "capacity")
    out = np.zeros((length, length))
    for k in range(length):  # the output nodes of the last layer
        u = n_layers * length + k
        for v in range(length):  # the input nodes
            out[k, v] = nx.maximum_flow_value(graph, u, v, flow_func=nx.algorithms.flow.edmonds_karp)
        if normalise:
            out[k] /= out[k].sum()
    return out


@pytest.fixture(scope="session")
def minilm_means():
    """Mean weights over heads of two real MiniLM sentences (8 and 12 tokens): ``[[layer, n, n], …]``."""
    from transformer_core.models.minilm_trace import run_minilm

    trace = run_minilm(["the cat sat on the mat", "a teacher explains attention to the whole class today"],
                       only=lambda name: name.endswith(".weights"))
    return [layer_means(trace, b) for b in range(2)]


def test_default_flow_is_compute_flows_rows_summing_to_one(minilm_means):
    for means in minilm_means:
        expected = compute_flows_reference(means)
        ours = attention_flow(means)
        np.testing.assert_allclose(ours.sum(-1), 1.0, atol=1e-9)
        np.testing.assert_allclose(ours, expected, atol=1e-9)


def test_raw_flow_is_the_maximum_flow_in_capacity_units(minilm_means):
    for means in minilm_means:
        raw = attention_flow(means, normalise=False)
        np.testing.assert_allclose(raw, compute_flows_reference(means, normalise=False), atol=1e-9)
        assert raw.max() <= 1 + 1e-9 and raw.sum(-1).min() > 2  # not a share: rows sum to well over 1


def test_random_capacities_match_the_reference():
    rng = np.random.default_rng(7)
    for n_layers, n in ((1, 3), (2, 4), (3, 5)):
        means = rng.dirichlet(np.ones(n), size=(n_layers, n))  # rows of attention, each summing to 1
        np.testing.assert_allclose(attention_flow(means), compute_flows_reference(means), atol=1e-9)


def test_export_and_figure_name_the_unit(capsys):
    from transformer_core.cli.export import main
    from transformer_core.figures.moves import across_layers_figure
    from transformer_core.models.causal import run_causal

    ids = [1, 2, 3, 1, 2, 3]
    trace = run_causal(ids)
    means = np.stack([trace.stage("weights", l)[0].astype(np.float64).mean(0) for l in range(trace.n_layers)])
    for view, normalise in (("flow", True), ("flow_raw", False)):
        assert main(["--model", "causal", "--text", "1 2 3 1 2 3", "--view", view, "--format", "csv",
                     "--out", "-"]) == 0
        frame = pd.read_csv(io.StringIO(capsys.readouterr().out), index_col=0)
        np.testing.assert_allclose(frame.to_numpy(), compute_flows_reference(means, normalise=normalise), atol=1e-6)
    tokens = [str(i) for i in ids]
    titles = {view: across_layers_figure(attention_flow(means, normalise=view != "flow_raw"), means[-1], tokens,
                                         view).layout.coloraxis.colorbar.title.text
              for view in ("rollout", "flow", "flow_raw")}
    assert "rows sum to 1" in titles["rollout"] and "rows sum to 1" in titles["flow"]
    assert "capacity units" in titles["flow_raw"]
