"""In Chromium at 1280×720: a focused head drawn across the column (25 to 40 tokens: the causal page's 32 tokens, a
30-token sentence on the explorer) fits, title and caption included, in the 660 px a 720-px screen shows under
Streamlit's header (it was 745 px tall)."""
from __future__ import annotations

import pytest

from browser_utils import ARTIFACTS, chromium_missing, wait_idle

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

FOCUS = """() => { const d = Array.from(document.querySelectorAll('.js-plotly-plot')).find(d => d.layout && d.layout.meta
        && d.layout.meta.head !== undefined && d.layout.meta.stage === 'weights');
    d.scrollIntoView({block: 'end'});
    const r = d.getBoundingClientRect(), p = d.querySelector('g.hm image').getBoundingClientRect();
    return {height: r.height, top: r.top, bottom: r.bottom, plot: p.height}; }"""


@pytest.mark.parametrize("path, name", [("/causal", "causal_32"),
                                        ("/explorer?text=" + "+".join(f"w{i}" for i in range(30)), "explorer_30")])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_wide_focused_head_fits_under_the_header(server, chromium, path, name, lang):
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}{path}{'&' if '?' in path else '?'}lang={lang}")
    wait_idle(page)
    found = page.evaluate(FOCUS)
    page.wait_for_timeout(300)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"wide_head_{name}_{lang}.png"))
    page.close()
    assert found["height"] <= 620, found  # the sticky answer line (~35 px) sits under the header too
    assert found["top"] >= 60, found  # below the header once its bottom is at the screen's edge
