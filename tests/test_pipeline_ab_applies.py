"""Pipeline A vs B: a change of n_heads or of the causal mask applies as it is made (no Apply button): the
figure's title and its numbers follow the picker at once, in English and 中文."""
from __future__ import annotations

import numpy as np
import pytest

from apptest_utils import figures, heatmap_z, new_app


def side(at, name: str) -> dict:
    return next(f for f in figures(at) if f["layout"].get("meta", {}).get("side") == name)


@pytest.mark.parametrize("lang, heads_word", [("en", "4 heads"), ("zh", "4 个头")])
def test_a_change_of_a_setting_shows_at_once(lang, heads_word):
    at = new_app(step="A vs B", lang=lang)
    at.switch_page("pages/pipeline.py").run()
    assert not at.exception, at.exception
    assert not [b for b in at.button if b.label.startswith(("Apply", "应用"))]  # nothing waits for a button
    before = heatmap_z(side(at, "a"))
    at.selectbox(key="pipeline_a_heads").set_value(4).run()
    a = side(at, "a")
    assert heads_word in a["layout"]["title"]["text"], a["layout"]["title"]["text"]
    assert not np.allclose(heatmap_z(a), before, equal_nan=True)  # head 0 of 4 heads, not of 1
    at.toggle(key="pipeline_a_causal").set_value(True).run()
    z = heatmap_z(side(at, "a"))
    n = z.shape[0]
    assert np.array_equal(np.isnan(z), ~np.tril(np.ones((n, n), bool)))  # the causal mask, drawn at once
    assert at.query_params["a_heads"] == "4" and at.query_params["a_causal"] == "1"
