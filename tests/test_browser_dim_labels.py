"""In Chromium at 1280×720: the dimension labels (d0 … d15) over a head's Q, K, V or context never run together: at
d_head 16 each horizontal label keeps a gap to the next ("d10d11d12…" was read as one word), in both languages."""
from __future__ import annotations

import pytest

from browser_utils import ARTIFACTS, chromium_missing, wait_idle

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

GAPS = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .filter(d => d.layout && d.layout.meta && d.layout.meta.head !== undefined && d.layout.meta.stage !== 'heads')
    .map(d => { const boxes = Array.from(d.querySelectorAll('.xtick text')).map(t => t.getBoundingClientRect())
                    .sort((a, b) => a.left - b.left);
                return {stage: d.layout.meta.stage, n: boxes.length,
                        gaps: boxes.slice(1).map((b, i) => Math.round((b.left - boxes[i].right) * 10) / 10),
                        vertical: Math.abs(d._fullLayout.xaxis.tickangle || 0) === 90}; })"""


@pytest.mark.parametrize("stage", ["q", "context"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_dimension_labels_keep_a_gap_at_d_head_16(server, chromium, stage, lang):
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}/explorer?stage={stage}&d_model=64&n_heads=4&lang={lang}")
    wait_idle(page)
    found = page.evaluate(GAPS)
    page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"dim_labels_{stage}_{lang}.png"))
    page.close()
    assert found and found[0]["n"] >= 8, found
    assert found[0]["vertical"] or min(found[0]["gaps"]) >= 3, found
