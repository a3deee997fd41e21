"""Exports and live timing: every tab of "Attention since 2017" offers its numbers as JSON (strict
JSON: −∞ of the online softmax's running maximum written as "-inf", as trace files do), and the KV-cache tab times
generation with and without the cache on this server."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from apptest_utils import new_app
from ui.modern.export import plain_data

LABEL = "This tab's numbers as JSON"


def test_plain_data_is_strict_json_and_keeps_every_number():
    data = {"m": np.array([-np.inf, 0.5, np.inf]), "n": np.int64(3), "rows": ((0, 2), (2, 4)), "x": np.float32(0.25),
            "nan": float("nan")}
    text = json.dumps(plain_data(data), allow_nan=False)  # raises on a bare NaN or Infinity
    assert json.loads(text) == {"m": ["-inf", 0.5, "inf"], "n": 3, "rows": [[0, 2], [2, 4]], "x": 0.25, "nan": "nan"}
    with pytest.raises(ValueError):  # the test can fail: the same data without plain_data is not strict JSON
        json.dumps({"m": [-math.inf]}, allow_nan=False)


def test_online_softmax_numbers_export_with_their_minus_infinity():
    from transformer_core.analysis.online_lab import online_demo

    data = online_demo(12, 4, 3, "window")  # what the page's online tab exports
    exported = json.loads(json.dumps(plain_data(data), allow_nan=False))
    first = exported["steps"][0]["m"]
    assert len(first) == 4 and all(isinstance(v, float) or v == "-inf" for v in first)
    np.testing.assert_allclose(np.array(exported["plain"], float), data["plain"], rtol=0, atol=1e-6)


@pytest.mark.parametrize("section, query", [("Positions", {}), ("Shared KV heads", {}),
                                            ("KV cache", {"model": "causal"}), ("Online softmax", {})])
def test_every_tab_has_its_json_download(section, query):
    at = new_app(section=section, **query)
    at.switch_page("pages/modern.py").run(timeout=300)
    assert not at.exception, [e.message for e in at.exception]
    assert [b.proto.label for b in at.get("download_button")].count("⬇ " + LABEL) == 1


def test_the_cache_is_timed_with_and_without_and_gives_the_same_tokens():
    from transformer_core.analysis.kv_cache_steps import timed_greedy
    from transformer_core.models.causal import load_causal_model

    out = timed_greedy(load_causal_model(), [5, 17, 3, 40, 22, 9, 31, 8] * 2, 8)
    assert out["n"] == 8 and out["same"] and out["cached"] > 0 and out["uncached"] > 0
    at = new_app(section="KV cache", model="causal")
    at.switch_page("pages/modern.py").run(timeout=300)
    captions = " ".join(c.value for c in at.caption)
    assert "a token with the cache" in captions and "Same tokens both ways: yes" in captions


def test_past_the_trained_length_in_numbers():
    """RoPE's slowest pair of SmolLM2 at its 8,192 tokens, against the formula written
    out here (θ = base^(−(d−2)/d) radians a position), and the positions tab says it with MiniLM's 512 rows."""
    from transformer_core.analysis.positions_lab import slowest_rope_turn

    assert abs(slowest_rope_turn(64, 100000.0, 8192) - 8192 * 100000.0 ** (-62 / 64) / (2 * math.pi)) < 1e-12
    assert slowest_rope_turn(64, 100000.0, 8192) < 1 < slowest_rope_turn(2, 10000.0, 8192)  # d = 2: θ = 1 rad
    at = new_app(section="Positions")
    at.switch_page("pages/modern.py").run(timeout=300)
    words = " ".join(m.value for m in at.markdown)
    assert "only 0.019 of a circle" in words and "position 512 cannot be encoded" in words
