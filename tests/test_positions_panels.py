"""The positions tab: each of the four score panels uses its own colour range (symmetric around 0, its own colour
bar), so none looks empty beside the learned table's strong first row; the axes name the tokens, not only their
positions."""
from __future__ import annotations

import numpy as np
import pytest

from apptest_utils import figures, heatmap_z, new_app


def panels(at) -> list[dict]:
    return [f for f in figures(at) if f["layout"].get("meta", {}).get("kind") == "scores"]


@pytest.mark.parametrize("lang, text, word", [("en", "the cat sat on the mat", "cat"),
                                              ("zh", "小猫坐在垫子上", "小猫")])
def test_each_panel_uses_its_own_range_and_names_the_tokens(lang, text, word):
    at = new_app(section="Positions", lang=lang, text=text)
    at.switch_page("pages/modern.py").run()
    assert not at.exception, at.exception
    found = panels(at)
    assert len(found) == 4
    for fig in found:
        z, heat = heatmap_z(fig), fig["data"][0]
        bound = np.nanmax(np.abs(z))
        assert heat["zmax"] == pytest.approx(bound, rel=1e-3) and heat["zmin"] == pytest.approx(-bound, rel=1e-3)
        assert heat["showscale"] is not False  # its own colour bar
        assert word in " ".join(fig["layout"]["xaxis"]["ticktext"]), fig["layout"]["xaxis"]["ticktext"]
        assert word in " ".join(fig["layout"]["yaxis"]["ticktext"]), fig["layout"]["yaxis"]["ticktext"]
    captions = " ".join(c.value for c in at.caption)
    assert ("own colour range" if lang == "en" else "各自的颜色范围") in captions, captions
