"""In the app: the explorer's n_kv_heads, window and sinks (URL, tiles, caption) and the masks
lab's sliding-window section showing the literal w = 3, s = 1 mask at T = 6. AppTest."""
from __future__ import annotations

import json

import numpy as np
import pytest

from apptest_utils import charts as chart_elements, decode, new_app
from test_page_statistics_finite import visible_text
from test_toy_gqa import WINDOW3_SINK1

SIX = "one two three four five six\nsix five four three two one"


def charts(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in chart_elements(at)]


def tiles(at) -> dict:
    return next(s for s in charts(at) if s["layout"].get("meta", {}).get("stage") == "heads")


def test_masks_lab_shows_the_literal_window_mask():
    at = new_app(text=SIX, section="Sliding window", window="3", sinks="1", numbers="1")  # its box open (lazy)
    at.switch_page("pages/masks_lab.py").run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(df for df in at.dataframe if df.value.shape == (6, 6)).value
    np.testing.assert_array_equal(table.to_numpy(), WINDOW3_SINK1.astype(int))
    mask = next(s for s in charts(at) if s["layout"]["meta"].get("kind") == "mask")
    np.testing.assert_array_equal(np.asarray(decode(mask["data"][0]["z"]), float), WINDOW3_SINK1.astype(float))
    text = visible_text(at)
    assert "row i is the query, column j the key" in text and "True = may attend" in text
    assert "with no sink" in text  # query 5 is past the window's reach of token 0
    assert (at.query_params["window"], at.query_params["sinks"]) == ("3", "1")


def test_masks_lab_window_in_chinese():
    at = new_app(text=SIX, section="Sliding window", window="2", sinks="0", lang="zh", numbers="1")
    at.switch_page("pages/masks_lab.py").run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(df for df in at.dataframe if df.value.shape == (6, 6)).value
    np.testing.assert_array_equal(table.to_numpy(), np.tril(np.ones((6, 6), int)) - np.tril(np.ones((6, 6), int), -2))
    assert "滑动窗口" in visible_text(at)


def test_explorer_without_the_new_keys_is_plain_attention():
    at = new_app()
    at.run()
    assert not at.exception
    assert at.query_params["n_kv_heads"] == "8" and at.query_params["window"] == "0"
    assert [a["text"] for a in tiles(at)["layout"]["annotations"]] == [f"head {h}" for h in range(8)]


def test_explorer_shared_heads_and_window():
    at = new_app(n_kv_heads="2", window="3", sinks="1")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [a["text"] for a in tiles(at)["layout"]["annotations"]] == [f"head {h} · KV {h // 4}" for h in range(8)]
    text = visible_text(at)
    assert "n_kv_heads = 2 key/value heads for n_heads = 8 query heads" in text and "(query heads 0–3 → KV 0, 4–7 → KV 1)" in text
    assert "= **10,240**" in text
    assert "128 bytes" in text and "46,080 bytes" in text
    assert "Sliding window w = 3, sinks s = 1" in text
    assert at.query_params["n_kv_heads"] == "2"


@pytest.mark.parametrize("value", ["3", "0", "16", "x"])
def test_explorer_refuses_a_non_divisor(value):
    at = new_app(n_kv_heads=value)
    at.run()
    assert not at.exception
    assert at.query_params["n_kv_heads"] == "8"
    assert any("n_kv_heads=" in w.value.replace("\\", "") for w in at.warning)


def focus_title(at) -> str:
    spec = next(s for s in charts(at) if s["layout"].get("meta", {}).get("stage") == "weights")
    return next(a["text"] for a in spec["layout"]["annotations"] if a.get("name") == "title")


@pytest.mark.parametrize("head, lang, expected", [(5, "en", "head 5 · KV 1 · "), (2, "zh", "头 2 · KV 0 · ")])
def test_explorer_focused_head_names_its_kv_head(head, lang, expected):
    """The focused head's title names the key/value head it reads (the tiles did; the large head did not)."""
    at = new_app(n_kv_heads="2", head=str(head), lang=lang)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert focus_title(at).startswith(expected), focus_title(at)
    plain = new_app(head=str(head), lang=lang)
    plain.run()
    assert "KV" not in focus_title(plain)
