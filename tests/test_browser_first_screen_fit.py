"""In Chromium at 1280×720: the explorer's focused heatmap, with its caption, ends above the screen's bottom edge on
the first screen for sentences of up to 12 tokens (a 4-token Chinese sentence's last row was cut in half, and the
default sentence's caption was below the fold); at 20 tokens the plot itself still ends in view."""
from __future__ import annotations

import urllib.parse

import pytest

from browser_utils import ARTIFACTS, chromium_missing, wait_idle

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

FOCUS = """() => { const d = Array.from(document.querySelectorAll('.js-plotly-plot')).find(d => d.layout && d.layout.meta
        && d.layout.meta.head !== undefined && d.layout.meta.stage !== 'heads');
    return {figure: d.getBoundingClientRect().bottom, plot: d.querySelector('g.hm image').getBoundingClientRect().bottom,
            scrolled: document.querySelector('[data-testid="stMain"]').scrollTop + window.scrollY}; }"""


@pytest.mark.parametrize("lang, text, whole", [
    ("en", None, True), ("zh", None, True), ("zh", "我们学习注意力机制", True), ("en", "we learn attention today", True),
    ("en", " ".join("abcdefghijkl"), True), ("en", " ".join("abcdefghijklmnopqrst"), False)])
def test_the_focused_heatmap_is_in_the_first_screen(server, chromium, lang, text, whole):
    query = {"lang": lang, **({"text": text} if text else {})}
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}/explorer?" + urllib.parse.urlencode(query))
    wait_idle(page)
    found = page.evaluate(FOCUS)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"first_screen_{lang}_{len((text or '').split())}.png"))
    page.close()
    assert found["scrolled"] == 0, found
    assert found["plot"] <= 720, found  # never a row cut in half
    if whole:
        assert found["figure"] <= 720, found  # the caption too
