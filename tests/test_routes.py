"""Information-flow routes (transformer_core.analysis.routes) against independent references: literal vectors; a
small random Hugging Face LlamaForCausalLM (eager, forward hooks), whose own hidden states the decomposition must
rebuild and whose parts' contributions are recomputed here by the definition in float64; and networkx's edge_dfs
over the whole graph (the LLM Transparency Tool's search) for the route."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from transformer_core.analysis import routes


def test_contributions_of_literal_vectors():
    # y = [2, 0] from the residual [1, 0] and one head moving [1, 0] (weight 1) and another moving [-1, 0] (weight 0)
    weights = np.array([[[1.0]], [[0.0]]], np.float32)  # [head, q, k]
    writes = torch.tensor([[[1.0, 0.0]], [[-1.0, 0.0]]])  # [head, k, d_model]
    heads, residual = routes.attention_contributions(weights, writes, np.array([[1.0, 0.0]]), np.array([[2.0, 0.0]]))
    # ‖y‖₁ = 2; ‖y − [1, 0]‖₁ = 1 for the residual and head 0 (proximity 1 each), head 1 writes 0 (proximity 0)
    np.testing.assert_allclose(heads[0, 0], [0.5, 0.0])
    assert residual[0] == pytest.approx(0.5)
    # a part pointing away from the sum contributes 0: y = [2, 0] = [3, 0] + [-1, 0] (‖y − [−1, 0]‖₁ = 3 > ‖y‖₁)
    mlp, res = routes.mlp_contributions(np.array([[3.0, 0.0]]), np.array([[-1.0, 0.0]]))
    assert mlp[0] == 0.0 and res[0] == pytest.approx(1.0)


def test_renormalized_drops_small_parts_and_sums_to_one():
    parts = np.array([[0.5, 0.03, 0.02]])
    kept, res = routes.renormalized(parts, np.array([0.45]), 0.04)
    np.testing.assert_allclose(kept[0], [0.5 / 0.95, 0.0, 0.0])
    assert res[0] == pytest.approx(0.45 / 0.95)


@pytest.fixture(scope="module")
def tiny_llama():
    """A random 2-layer LLaMA (4 query heads sharing 2 key/value heads) run eagerly on 7 tokens, with what each
    block reads and writes captured by forward hooks."""
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                      attn_implementation="eager")
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    ids = torch.tensor([[3, 17, 5, 42, 17, 5, 9]])
    seen: dict[str, torch.Tensor] = {}
    hooks = []
    for i, layer in enumerate(model.model.layers):
        hooks.append(layer.self_attn.v_proj.register_forward_hook(
            lambda _m, _i, out, i=i: seen.__setitem__(f"v{i}", out.detach())))
        hooks.append(layer.self_attn.register_forward_hook(
            lambda _m, _i, out, i=i: seen.__setitem__(f"attn{i}", out[0].detach())))
        hooks.append(layer.mlp.register_forward_hook(lambda _m, _i, out, i=i: seen.__setitem__(f"mlp{i}", out.detach())))
    with torch.no_grad():
        out = model(ids, output_attentions=True, output_hidden_states=True)
    for h in hooks:
        h.remove()
    return model, config, out, seen


def _blocks(model, config, out, seen):
    n_heads, n_kv = config.num_attention_heads, config.num_key_value_heads
    d_head = config.hidden_size // n_heads
    stream = torch.stack(out.hidden_states[:-1])  # entering each block: [layer, 1, pos, d_model]
    # the last hidden state Hugging Face returns is after the final norm: the stream the norm reads is block 1's output
    last = out.hidden_states[-2][0] + seen["attn1"][0] + seen["mlp1"][0]
    stream = np.concatenate([stream[:, 0].numpy(), last[None].numpy()])  # [layer + 1, pos, d_model]

    def block(layer):
        weights = out.attentions[layer][0].numpy()  # [head, q, k]
        v = seen[f"v{layer}"][0].view(-1, n_kv, d_head).permute(1, 0, 2)  # [kv_head, k, d_head]
        values = v.repeat_interleave(n_heads // n_kv, dim=0).numpy()  # [head, k, d_head]
        mid = stream[layer] + seen[f"attn{layer}"][0].numpy()
        return weights, values, mid, seen[f"mlp{layer}"][0].numpy()

    def w_o(layer):
        return model.model.layers[layer].self_attn.o_proj.weight.detach().numpy()

    return stream, block, w_o


def test_tables_rebuild_hugging_face_streams_and_match_the_definition(tiny_llama):
    model, config, out, seen = tiny_llama
    stream, block, w_o = _blocks(model, config, out, seen)
    tables = routes.contribution_tables(2, block, w_o, stream)
    assert tables["gap"] < 1e-5  # Σ heads' moved tokens + the residual = Hugging Face's own stream after attention
    d_head, n = config.hidden_size // config.num_attention_heads, stream.shape[1]
    for layer in range(2):
        weights, values, mid, mlp_out = (np.asarray(a, np.float64) for a in block(layer))
        wo = np.asarray(w_o(layer), np.float64)
        for q in range(n):
            parts = [weights[h, q, k] * values[h, k] @ wo[:, h * d_head:(h + 1) * d_head].T
                     for k in range(n) for h in range(config.num_attention_heads)] + [stream[layer][q]]
            y = mid[q]
            near = np.array([max(0.0, np.abs(y).sum() - np.abs(y - p).sum()) for p in parts])
            want = near / near.sum()
            got = np.concatenate([tables["attn"][layer, q].ravel(), [tables["attn_residual"][layer, q]]])
            np.testing.assert_allclose(got, want, atol=2e-6)
        whole = mid + mlp_out
        near = [np.maximum(0, np.abs(whole).sum(-1) - np.abs(whole - p).sum(-1)) for p in (mlp_out, mid)]
        np.testing.assert_allclose(tables["mlp"][layer], near[0] / (near[0] + near[1]), atol=2e-6)


def _reference_route(tables, position, threshold):
    """The whole graph with every edge renormalized, then every edge with weight > 0 leading into the output, found
    by networkx's depth-first edge search from the top (as the LLM Transparency Tool builds its routes)."""
    n_layers, n = tables["attn"].shape[:2]
    full = nx.DiGraph()

    def add(u, v, w):
        full.add_edge(u, v, weight=full.get_edge_data(u, v, {"weight": 0.0})["weight"] + w)

    for layer in range(n_layers):
        heads, res = routes.renormalized(tables["attn"][layer], tables["attn_residual"][layer], threshold)
        mlp, mres = routes.renormalized(tables["mlp"][layer], tables["mlp_residual"][layer], threshold)
        for i in range(n):
            for j in range(n):
                add(("x", layer, j), ("a", layer, i), float(heads[i, j].sum()))
            add(("x", layer, i), ("a", layer, i), float(res[i]))
            add(("a", layer, i), ("m", layer, i), float(mlp[i]))
            add(("m", layer, i), ("x", layer + 1, i), float(mlp[i]))
            add(("a", layer, i), ("x", layer + 1, i), float(mres[i]))
    search = nx.subgraph_view(full.reverse(), filter_edge=lambda u, v: full[v][u]["weight"] > 0)
    edges = list(nx.edge_dfs(search, source=("x", n_layers, position)))
    return {(v, u): full[v][u]["weight"] for u, v in edges}


@pytest.mark.parametrize("threshold", [0.0, 0.04, 0.2])
def test_route_equals_a_depth_first_search_of_the_whole_graph(tiny_llama, threshold):
    model, config, out, seen = tiny_llama
    stream, block, w_o = _blocks(model, config, out, seen)
    tables = routes.contribution_tables(2, block, w_o, stream)
    for position in (6, 3):
        graph = routes.route_graph(tables["attn"], tables["attn_residual"], tables["mlp"], tables["mlp_residual"],
                                   position, threshold)
        want = _reference_route(tables, position, threshold)
        got = {(u, v): d["weight"] for u, v, d in graph.edges(data=True)}
        assert got.keys() == want.keys()
        np.testing.assert_allclose([got[e] for e in want], list(want.values()), atol=1e-6)
        assert all(v[2] <= position for _u, v in got)  # a causal route never reads a later token


def test_bad_position_and_threshold_are_refused():
    zeros = np.zeros((1, 2))
    with pytest.raises(ValueError, match="position"):
        routes.route_graph(np.zeros((1, 2, 2, 1)), zeros, zeros, zeros, 2)
    with pytest.raises(ValueError, match="threshold"):
        routes.route_graph(np.zeros((1, 2, 2, 1)), zeros, zeros, zeros, 0, threshold=1.0)


def test_edge_rows_name_the_half_of_the_block_and_the_residual_share(tiny_llama):
    model, config, out, seen = tiny_llama
    stream, block, w_o = _blocks(model, config, out, seen)
    tables = routes.contribution_tables(2, block, w_o, stream)
    graph = routes.route_graph(tables["attn"], tables["attn_residual"], tables["mlp"], tables["mlp_residual"], 6, 0.0)
    rows = routes.edge_rows(graph)
    keys = [(r["block"], r["kind"], r["layer"], r["from"], r["to"]) for r in rows]
    assert len(keys) == len(set(keys))  # the two residual edges of a position (attention half, MLP half) differ
    for r in rows:
        if r["from"] == r["to"] and r["block"] == "attention":  # a position's own edge: its heads and its residual
            assert r["weight"] == pytest.approx(sum(r["heads"].values()) + r["residual"], abs=1e-6)
    assert {r["block"] for r in rows if r["kind"] == "mlp"} == {"mlp"}


def test_figure_text_shows_control_characters_as_pictures():
    # a checkpoint's raw vocabulary can hold a control character: plotly.js's image export failed on it (Error 525)
    from transformer_core.figures.routes import routes_figure
    from transformer_core.figures.writes import lens_figure

    lens = lens_figure(np.zeros((2, 2)), [["a\u0017", "<b>"], ["x", "\u202e y"]], ["t0", "t1\u0007"], target="\u0017")
    graph = nx.DiGraph()
    graph.add_edge(("x", 0, 0), ("a", 0, 1), weight=0.5, kind="attention", heads={0: 0.5}, residual=0.0)
    route = routes_figure(graph, ["\u0017", "b\u202e"], 1, title="t\u0007")
    text = lens.to_json() + route.to_json()
    assert not any(ch in text for ch in ("\u0017", "\u0007", "\u202e", "\\u0017", "\\u0007", "\\u202e"))
    assert "a␗" in lens.data[0].text[0] and "⟨RLO⟩" in lens.data[0].text[1][1]
