"""The SmolLM2 page's information-flow routes (AppTest): closed, they cost nothing; opened (?routes=1), they come
from the prompt's one cached run (no other forward call) and draw the core's route; the token and the threshold go to
and come from the URL; on the indirect-object prompt the route into the last token reads " Mary" through a late
head, as the name movers of Wang et al. 2022 do."""
from __future__ import annotations

import pytest

from apptest_utils import figures, new_app

PAGE = "pages/llm.py"
IOI = "When Mary and John went to the store, John gave a drink to"


@pytest.fixture(scope="module")
def smollm2(smollm2_or_skip):
    from transformer_core.models.smollm2 import load_smollm2

    return load_smollm2()


def open_page(**query):
    at = new_app(**query)
    at.switch_page(PAGE).run(timeout=600)
    assert not at.exception, [e.message for e in at.exception]
    return at


def routes_view(at):
    return [f for f in figures(at) if f["layout"].get("meta", {}).get("view") == "routes"]


def test_routes_open_on_request_from_the_one_run_and_draw_the_core_route(smollm2):
    from transformer_core.analysis.routes import contribution_tables, route_graph
    from transformer_core.models.smollm2_trace import route_block, run_smollm2

    model, _tokenizer = smollm2
    assert not routes_view(open_page())  # closed by default: no figure, no work
    calls = []
    handle = model.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        at = open_page(routes="1", threshold="0.04")
    finally:
        handle.remove()
    assert len(calls) == 1  # the prompt's one run: every block is recomputed from its cached residual stream
    (fig,) = routes_view(at)
    _trace, prediction = run_smollm2(IOI, residuals=True, only=lambda n: False)
    stream = prediction["stream"]
    tables = contribution_tables(30, lambda layer: route_block(stream[layer], layer),
                                 lambda layer: model.layers[layer].attention.W_O.weight.detach().numpy(), stream)
    assert tables["gap"] < 1e-3  # the parts rebuild SmolLM2's own streams
    graph = route_graph(tables["attn"], tables["attn_residual"], tables["mlp"], tables["mlp_residual"], 13, 0.04)
    assert fig["layout"]["meta"]["edges"] == graph.number_of_edges()
    diamonds = [p for t in fig["data"] if t.get("customdata") for p in t["customdata"]]
    assert sorted((d[0], d[2], d[3]) for d in diamonds) == sorted(
        (u[1], u[2], v[2]) for u, v, d in graph.edges(data=True) if d.get("heads"))
    # " Mary" (position 1) is moved into the last token by a late layer's heads, with a large share
    mary = [d for d in diamonds if d[2] == 1 and d[3] == 13 and d[0] >= 15]
    assert mary and max(d[4] for d in mary) > 0.1
    assert at.query_params["route_pos"] == "13" and at.query_params["threshold"] == "0.04"


def test_token_and_threshold_round_trip_the_url(smollm2):
    at = open_page(routes="1", route_pos="3", threshold="0.2")
    assert at.selectbox(key="llm_route_pos").value == 3
    (fig,) = routes_view(at)
    assert fig["layout"]["meta"]["positions"] == 4  # tokens up to the chosen one
    strict = fig["layout"]["meta"]["edges"]
    at.select_slider(key="llm_threshold").set_value(0.01).run(timeout=600)
    assert at.query_params["threshold"] == "0.01"
    assert routes_view(at)[0]["layout"]["meta"]["edges"] > strict  # a lower threshold keeps more edges
    bad = open_page(routes="1", route_pos="99")
    assert bad.selectbox(key="llm_route_pos").value == 13  # not a position of the prompt: its last token, with a note
    notes = " ".join(w.value for w in bad.warning).replace("\\", "")  # Markdown escapes
    assert "route_pos=99" in notes
