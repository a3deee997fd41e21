"""AppTest of the "Attention since 2017" page: one test per tab — it runs, its figures are there with
finite numbers, its numbers are the computation's — and every choice read from and written to the URL."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from apptest_utils import charts, decode, figures, new_app

PAGE = "pages/modern.py"


def open_tab(section: str, **query):
    at = new_app(section=section, **query)
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def metas(at) -> list[dict]:
    return [f["layout"].get("meta", {}) for f in figures(at)]


def no_nan(at) -> None:
    for chart in charts(at):
        assert not re.search(r"[:\[,]\s*-?(NaN|Infinity)\b", chart.proto.spec)


def text(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption])


def test_positions_tab_four_schemes_each_on_its_own_colour_range():
    at = open_tab("Positions", alibi_head="0", query="2", key="1")
    kinds = [m.get("scheme") for m in metas(at) if m.get("kind") == "scores"]
    assert kinds == ["sinusoidal", "learned", "rope", "alibi"]
    ranges = {(f["data"][0]["zmin"], f["data"][0]["zmax"]) for f in figures(at) if f["layout"]["meta"].get("kind") == "scores"}
    assert len(ranges) == 4 and all(low == -high for low, high in ranges)  # each its own, symmetric around 0
    assert {"distance", "rope"} <= {m.get("kind") for m in metas(at)}
    assert at.selectbox(key="modern_alibi_head").value == 0 and at.query_params["query"] == "2"
    assert "slope here is 0.5" in text(at)
    relative = at.dataframe[0].value
    assert list(relative.iloc[:, 0]) == ["Sinusoidal (added)", "Learned table (added)", "RoPE (rotated)", "ALiBi (bias)"]
    assert abs(float(relative.iloc[2, 3])) < 1e-4 and float(relative.iloc[3, 3]) == 0.0
    no_nan(at)
    at.selectbox(key="modern_alibi_head").set_value(7).run()
    assert at.query_params["alibi_head"] == "7"


def test_shared_kv_tab_bytes_and_groups():
    at = open_tab("Shared KV heads", n_kv="1")
    groups = next(f for f in figures(at) if f["layout"]["meta"].get("kind") == "groups")
    assert groups["layout"]["meta"]["n_kv_heads"] == 1
    assert "15,360 bytes" in text(at)
    at.segmented_control(key="modern_n_kv").set_value(3).run()
    assert at.query_params["n_kv"] == "3"
    assert "46,080 bytes" in text(at) and "377,487,360 bytes" in text(at)
    z = np.array(decode(next(f for f in figures(at) if f["layout"]["meta"].get("kind") == "groups")["data"][0]["z"]))
    assert z.shape == (9, 3) and (z.sum(axis=1) == 1).all() and list(z.argmax(axis=1)) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert re.search(r"largest difference \*\*\d\.\de-0[5-9]\*\*", text(at))


def test_kv_cache_tab_causal_rows_grow_and_match():
    at = open_tab("KV cache", model="causal", step="5")
    meta = next(m for m in metas(at) if m.get("kind") == "query_row")
    assert meta == {"kind": "query_row", "model": "causal", "step": 5}
    fig = next(f for f in figures(at) if f["layout"]["meta"].get("kind") == "query_row")
    weights = np.array(decode(fig["data"][0]["z"]), dtype=float)
    assert weights.shape == (4, 20)  # 4 heads × (16 prompt + 4 generated) cached keys
    assert np.allclose(weights.sum(axis=1), 1.0, atol=1e-5)
    values = {m.label: m.value for m in at.metric}
    assert values["Cached key rows (per layer)"] == "20" and values["New query"] == "1 × 4 × 1 × 16"
    assert float(values["|cached − recomputed| logits"]) <= 1e-4
    at.select_slider(key="modern_step").set_value(32).run()
    assert at.query_params["step"] == "32" and {m.label: m.value for m in at.metric}["Cached key rows (per layer)"] == "47"


def smollm2_or_skip():
    from transformer_core.models.gguf_weights import SmolLM2Unavailable, gguf_path

    try:
        gguf_path()
    except SmolLM2Unavailable as err:
        pytest.skip(str(err))


def test_kv_cache_tab_smollm2():
    smollm2_or_skip()
    at = open_tab("KV cache", model="smollm2", step="2")
    values = {m.label: m.value for m in at.metric}
    assert values["New query"] == "1 × 9 × 1 × 64"
    assert float(values["|cached − recomputed| logits"]) <= 1e-4
    assert "Berlin" in text(at)


def test_long_inputs_tab_window_and_sinks():
    smollm2_or_skip()
    at = open_tab("Long inputs", window="6", sinks="1")
    mask = next(f for f in figures(at) if f["layout"]["meta"].get("kind") == "mask")
    assert mask["layout"]["meta"] == {"kind": "mask", "window": 6, "sinks": 1}
    z = np.array(decode(mask["data"][0]["z"]), dtype=float)
    assert z[-1, 0] == 1 and z[-1, 1] == 0 and z[-1, -6:].all()  # the sink and the last 6 keys
    full, window, sinks = (at.dataframe[i].value for i in range(3))
    top = [frame.iloc[0, 0].split()[0] for frame in (full, window, sinks)]
    assert top[0] == "␣Berlin" and top[1] != "␣Berlin" and top[2] == "␣Berlin"
    assert full.iloc[0, 0] == "␣Berlin  96.4%"
    at.select_slider(key="modern_sinks").set_value(0).run()
    assert at.query_params["sinks"] == "0"
    assert at.dataframe[2].value.iloc[0, 0] == at.dataframe[1].value.iloc[0, 0]  # no sink: the same as the window


def test_online_softmax_tab_steps_through_tiles():
    at = open_tab("Online softmax", n="10", bq="3", bk="4", mask="causal", tile="2")
    fig = next(f for f in figures(at) if f["layout"]["meta"].get("kind") == "tiles")
    assert fig["layout"]["meta"]["tile"] == 2
    current = fig["layout"]["shapes"][-1]
    assert (current["x0"], current["x1"], current["y0"], current["y1"]) == (3.5, 7.5, -0.5, 2.5)  # keys 4–7, rows 0–2
    assert "Tile 2 of 12" in fig["layout"]["title"]["text"]
    assert "skipped" in " ".join(a.value for a in at.info)  # rows 0–2 against keys 4–7: all blocked (causal)
    assert re.search(r"plain softmax attention\| = \*\*\d\.\de-0[6-9]\*\*", text(at))
    at.select_slider(key="modern_tile").set_value(3).run()
    table = at.dataframe[0].value
    assert list(table["query"]) == [0, 1, 2] and list(table["output so far"]) == list(table["final"])
    assert at.query_params["tile"] == "3"
    no_nan(at)


def test_a_bad_url_value_falls_back_with_a_note():
    at = open_tab("Online softmax", bq="99")
    assert at.select_slider(key="modern_bq").value == 4
    assert any("bq=99" in w.value for w in at.warning)


def test_the_page_is_in_the_navigation_and_speaks_chinese():
    at = open_tab("Online softmax", lang="zh")
    assert at.title[0].value == "2017 年以来的注意力"
    assert "在线 softmax" in json.dumps([t.label for t in at.tabs], ensure_ascii=False)


SECTIONS = ["Positions", "Shared KV heads", "KV cache", "Long inputs", "Online softmax"]


@pytest.mark.parametrize("section", SECTIONS)
def test_every_tab_in_chinese_leaves_no_english_sentence(section):
    from test_i18n_pages import TEXT, english_sentences, visible_texts

    if section == "Long inputs":
        smollm2_or_skip()
    at = open_tab(section, lang="zh", text=TEXT)
    texts = visible_texts(at)
    assert len(texts) > 8
    assert {t[:120]: english_sentences(t) for t in texts if english_sentences(t)} == {}


MODERN_KEYS = ("section", "alibi_head", "query", "key", "n_kv", "model", "step", "window", "sinks", "n", "bq", "bk",
               "mask", "tile", "text")
TAB_OF = {"alibi_head": "Positions", "query": "Positions", "key": "Positions", "text": "Positions",
          "n_kv": "Shared KV heads", "model": "KV cache", "step": "KV cache", "window": "Long inputs",
          "sinks": "Long inputs", "n": "Online softmax", "bq": "Online softmax", "bk": "Online softmax",
          "mask": "Online softmax", "tile": "Online softmax"}


def test_random_url_parameters_never_break_the_page():
    """As tests/test_url_property.py does for the other pages: odd values for this page's own parameters, on the
    tab they belong to, never give an exception element or a Python nan/inf in the visible text."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from test_url_property import check, values

    @settings(max_examples=8, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.sampled_from([k for k in MODERN_KEYS if k not in ("section", "window", "sinks")]),
           st.one_of(values, st.lists(values, min_size=2, max_size=3)), st.one_of(values, st.just("3")))
    def run(key, value, tile):
        check(PAGE, {"section": TAB_OF[key], key: value, "tile": tile} if key != "tile" else
              {"section": TAB_OF[key], key: value})

    run()


@pytest.mark.parametrize("query", [{"section": "Long inputs", "window": "nan", "sinks": "9" * 50},
                                   {"section": "Long inputs", "window": "0", "sinks": "-1"},
                                   {"section": "KV cache", "model": "smollm2", "step": "１"},
                                   {"section": "Online softmax", "n": "24", "bq": "1", "bk": "1", "tile": "576"},
                                   {"section": "nonsense", "n_kv": "2"}])
def test_chosen_hostile_links(query):
    from test_url_property import check

    if query["section"] in ("Long inputs", "KV cache"):
        smollm2_or_skip()
    check(PAGE, query)
