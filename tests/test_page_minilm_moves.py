"""The MiniLM page's "what attention really moves" links (AppTest): stage=norms, view=rollout|flow, pair=i,j and
color=<score>. Every figure's numbers are checked against an independent recomputation from a fresh MiniLM run."""
from __future__ import annotations

import numpy as np
import pytest

from apptest_utils import figures, focus, heatmap_z, tiles
from test_page_minilm import needs_minilm, open_page, overview_of

TEXT = "The cat sat on the mat."
LONG = "The old fisherman finally sat down to rest after a long day at the busy harbour by the sea."


def reference(text: str, batch: int = 0):
    """A fresh MiniLM run of the page's batch (the text plus its built-in example) with norms of every layer."""
    from transformer_core.analysis.value_norms import with_norms
    from transformer_core.models.minilm_trace import run_minilm
    from ui.minilm.compute import with_example

    sentences, _ = with_example((text,))
    trace = run_minilm(list(sentences), only=lambda n: n.endswith((".attention.weights", ".attention.v")))
    return with_norms(trace)


def by_stage(at, stage: str) -> list[dict]:
    return [f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == stage]


@needs_minilm
def test_stage_norms_link_draws_the_norms_focus_tiles_and_overview():
    at = open_page(text=TEXT, stage="norms", layer="2", head="5")
    ref = reference(TEXT)
    fig = focus(at)
    assert fig["layout"]["meta"] == {"stage": "norms", "head": 5, "layer": 2, "batch": 0, "cells": True}
    n = len(ref.tokens[0])
    expected = np.where(ref.visible(0), ref.stage("norms", 2)[0, 5], np.nan)
    np.testing.assert_allclose(heatmap_z(fig), expected, atol=1e-5)
    _, all_heads = tiles(at, "norms")
    np.testing.assert_allclose(all_heads[5], expected, atol=1e-5)
    over = overview_of(at)
    meta = over["layout"]["meta"]
    assert meta["of"] == "norms"
    m, g = meta["tile"], meta["gutter"]
    tile = heatmap_z(over)[3 * (m + g):3 * (m + g) + m, 7 * (m + g):7 * (m + g) + m]
    np.testing.assert_allclose(tile, np.where(ref.visible(0), ref.stage("norms", 3)[0, 7], np.nan), atol=1e-5)
    assert over["data"][0]["zmax"] == pytest.approx(np.nanmax([ref.stage("norms", l)[0][:, ref.visible(0)]
                                                               for l in range(6)]), rel=1e-5)
    text = " ".join(m.value for m in at.markdown)
    assert "of this head's weight goes to" in text and "of what it moves" in text
    assert not at.exception and at.query_params["stage"] == "norms" and n == 20


@needs_minilm
def test_view_rollout_link_draws_rollout_beside_the_last_layer_on_one_range():
    from transformer_core.analysis.rollout import attention_rollout, layer_means

    at = open_page(text=TEXT, view="rollout")
    ref = reference(TEXT)
    [fig] = by_stage(at, "rollout")
    z = np.asarray(fig["data"][0]["z"] if isinstance(fig["data"][0]["z"], list) else heatmap_z(fig), float)
    expected = attention_rollout(layer_means(ref, 0))
    assert z.shape == (9, 9)  # [CLS] the cat sat on the mat . [SEP]: real tokens only
    np.testing.assert_allclose(z, expected, atol=1e-5)
    np.testing.assert_allclose(z.sum(1), 1.0, atol=1e-5)
    last = np.asarray(fig["data"][1]["z"] if isinstance(fig["data"][1]["z"], list) else
                      heatmap_z({"data": [fig["data"][1]]}), float)
    np.testing.assert_allclose(last, ref.stage("weights", 5)[0, :, :9, :9].mean(0), atol=1e-5)
    assert fig["data"][0]["coloraxis"] == fig["data"][1]["coloraxis"]  # one colour range
    assert fig["layout"]["coloraxis"]["cmax"] == pytest.approx(max(z.max(), last.max()), rel=1e-5)
    assert at.query_params["view"] == "rollout"


@needs_minilm
def test_view_flow_link_draws_flow_and_refuses_a_long_sentence():
    from transformer_core.analysis.rollout import FLOW_TOKEN_LIMIT, attention_flow, layer_means

    at = open_page(text=TEXT, view="flow")
    [fig] = by_stage(at, "flow")
    z = np.asarray(heatmap_z(fig), float)
    np.testing.assert_allclose(z, attention_flow(layer_means(reference(TEXT), 0)), atol=1e-5)
    at = open_page(text=LONG, view="flow")
    assert not by_stage(at, "flow")
    assert any(f"up to {FLOW_TOKEN_LIMIT} tokens" in i.value for i in at.info)


@needs_minilm
def test_pair_link_ranks_all_72_heads_and_the_pickers_move_it():
    at = open_page(text=TEXT, pair="2,3")
    ref = reference(TEXT)
    [table] = [d.value for d in at.dataframe if "weight_rank" in d.value.columns]
    assert len(table) == 72
    alpha = np.array([ref.stage("weights", l)[0, :, 2, 3] for l in range(6)])  # [layer, head]
    top = np.unravel_index(alpha.argmax(), alpha.shape)
    assert (table.iloc[0]["layer"], table.iloc[0]["head"]) == top
    assert table.iloc[0]["weight"] == pytest.approx(alpha.max(), abs=1e-6)
    assert table.iloc[0]["norm"] == pytest.approx(ref.stage("norms", top[0])[0, top[1], 2, 3], abs=1e-5)
    assert list(table["weight_rank"]) == sorted(table["weight_rank"])
    at.selectbox(key="minilm_pair_q").set_value(4).run()
    assert at.query_params["pair"] == "4,3"
    at.selectbox(key="minilm_q").set_value(6).run()  # picking (or clicking) a cell to explain picks the pair too
    assert at.query_params["pair"] == "6,0"  # the explained cell: query 6, key 0


@needs_minilm
def test_color_link_fades_the_overview_and_sorts_the_head_types_table():
    at = open_page(text=TEXT, color="previous_token")
    meta = overview_of(at)["layout"]["meta"]
    assert meta["color"] == "previous-token"
    scores = np.array(meta["scores"])
    # layer 0 head 2: MiniLM's previous-token head; TransformerLens's score divides by all 9 rows, and row 0 ([CLS])
    # has no previous token, so a perfect head scores 8/9 (0.99+ over the rows with a target)
    assert scores.shape == (6, 12) and 0.99 * 8 / 9 < scores[0, 2] <= 8 / 9 + 1e-6
    [types] = [d.value for d in at.dataframe if "broadness" in d.value.columns]
    assert list(types["previous_token"]) == sorted(types["previous_token"], reverse=True)
    assert (types.iloc[0]["layer"], types.iloc[0]["head"]) == (0, 2)


@needs_minilm
def test_bad_links_fall_back_with_a_note():
    at = open_page(text=TEXT, view="sideways", pair="99,1", color="purple")
    notes = " ".join(w.value for w in at.warning)
    for what in ("view=sideways", "pair=99,1", "color=purple"):
        assert what in notes
    assert (at.query_params["view"], at.query_params["pair"], at.query_params["color"]) == ("off", "none", "none")
    assert not by_stage(at, "rollout")


def test_a_ranked_row_opens_its_head():
    """The pair and head-type tables are sorted, so row r opens the r-th (layer, head) of the order, not r's divmod."""
    from streamlit.testing.v1 import AppTest

    def script():
        import streamlit as st

        from ui.minilm.moves import open_ranked

        st.session_state["event"] = {"selection": {"rows": [1]}}
        open_ranked("event", ((3, 4), (5, 11), (0, 2)))
        st.write(st.session_state["minilm_layer"], st.session_state["minilm_head"])

    at = AppTest.from_function(script, default_timeout=60).run()
    assert not at.exception
    assert [m.value for m in at.markdown] == ["`5` `11`"]  # layer 5, head 11: the second row of the order
