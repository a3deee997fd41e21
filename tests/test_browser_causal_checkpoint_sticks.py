"""In Chromium at 1280×720: the causal page's checkpoint slider stays on screen, under the header, while the learner
looks at the heads it changes (the overview ~600 px below it), and moves on before the head view, whose answer line
sticks in its place; in English and 中文."""
from __future__ import annotations

import pytest

from browser_utils import ARTIFACTS, chromium_missing, wait_idle

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

BOXES = """(which) => { const box = e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom]; };
    const plot = Array.from(document.querySelectorAll('.js-plotly-plot')).find(d => d.layout && d.layout.meta
        && (which === 'overview' ? d.layout.meta.kind === 'overview' || d.layout.meta.stage === 'overview'
                                 : d.layout.meta.head !== undefined && d.layout.meta.stage === 'weights'));
    plot.scrollIntoView({block: which === 'overview' ? 'end' : 'center'});
    return {slider: box(document.querySelector('.st-key-causal_step')), plot: box(plot)}; }"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_checkpoint_slider_stays_beside_the_heads_it_changes(server, chromium, lang):
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}/causal?lang={lang}")
    wait_idle(page)
    at_heads = page.evaluate(BOXES, "overview")
    page.wait_for_timeout(300)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"causal_sticky_{lang}.png"))
    at_head_view = page.evaluate(BOXES, "focus")
    page.close()
    slider, plot = at_heads["slider"], at_heads["plot"]
    assert 55 <= slider[0] and slider[1] <= plot[0] + 5, at_heads  # under the header, above the overview's tiles
    assert plot[1] <= 721, at_heads
    assert at_head_view["slider"][1] < 60, at_head_view  # gone by the head view: its answer line sticks there
