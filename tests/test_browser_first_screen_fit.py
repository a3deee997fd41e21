"""In Chromium at 1280×720: the explorer's focused heatmap, with its caption, ends above the screen's bottom edge on
the first screen for sentences of up to 12-13 tokens, English and Chinese, short words and long (a 4-token Chinese
sentence's last row was cut in half, and the default sentence's caption was below the fold), while its plot stays at
least 250 px wide with every token labelled, and the tiles of the 8 heads beside it end in view too; at 20 tokens the
plot itself still ends in view."""
from __future__ import annotations

import urllib.parse

import pytest

from browser_utils import chromium_missing, wait_idle

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

FOCUS = """() => { const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout && d.layout.meta && d.layout.meta.head !== undefined && d.layout.meta.stage !== 'heads');
    const plot = d.querySelector('g.hm image').getBoundingClientRect();
    const tiles = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout && d.layout.meta && d.layout.meta.stage === 'heads');
    return {figure: d.getBoundingClientRect().bottom, plot: plot.bottom, width: plot.width,
            tiles: tiles.getBoundingClientRect().bottom,
            labels: d.querySelectorAll('.ytick text').length, rows: d._fullData[0].z.length,
            scrolled: document.querySelector('[data-testid="stMain"]').scrollTop + window.scrollY}; }"""

TWELVE = "The animal didn't cross the street because it was too tired."  # long key labels, turned upright


@pytest.mark.parametrize("lang, text, whole", [
    ("en", None, True), ("zh", None, True), ("zh", "我们学习注意力机制", True), ("en", TWELVE, True),
    ("zh", "我们今天学习注意力机制，因为它能帮助模型理解句子", True), ("en", " ".join("abcdefghijklmnopqrst"), False)])
def test_the_focused_heatmap_is_in_the_first_screen(server, chromium, lang, text, whole, tmp_path):
    query = {"lang": lang, **({"text": text} if text else {})}
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}/explorer?" + urllib.parse.urlencode(query))
    wait_idle(page)
    found = page.evaluate(FOCUS)
    page.screenshot(path=str(tmp_path / f"first_screen_{lang}.png"))
    page.close()
    assert found["scrolled"] == 0, found
    assert found["plot"] <= 720, found  # never a row cut in half
    if whole:
        assert found["figure"] <= 720, found  # the caption too
        assert found["width"] >= 250 and found["labels"] == found["rows"], found  # large, every row labelled
        assert found["tiles"] <= 720, found  # and the 8 heads' tiles beside it (56-px tiles; 66 ended at 736)
