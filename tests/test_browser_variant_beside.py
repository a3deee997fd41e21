"""In Chromium at 1280×720: the explorer's n_kv_heads / window / sinks controls sit beside the focused heatmap they
change (in its side column, within a screen of it), not ~1,300 px below it; a window typed there is drawn at once."""
from __future__ import annotations

import pytest

from browser_utils import ARTIFACTS, chromium_missing, wait_idle

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

WHERE = """() => { const focus = Array.from(document.querySelectorAll('.js-plotly-plot')).find(d => d.layout
        && d.layout.meta && d.layout.meta.head !== undefined && d.layout.meta.stage !== 'heads');
    const f = focus.getBoundingClientRect(), w = document.querySelector('.st-key-explorer_window').getBoundingClientRect();
    return {figure: [f.left, f.top, f.right, f.bottom], window: [w.left, w.top, w.right, w.bottom]}; }"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_window_control_sits_beside_the_heatmap_it_changes(server, chromium, lang):
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}/explorer?lang={lang}&window=3")  # a choice made: its box is open
    wait_idle(page)
    found = page.evaluate(WHERE)
    fig, ctl = found["figure"], found["window"]
    assert ctl[0] >= fig[2] - 5, found  # to the right of the figure, in its side column
    assert ctl[3] - fig[1] <= 660, found  # the control and the figure's top in one screen
    page.locator(".st-key-explorer_window").scroll_into_view_if_needed()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"variant_beside_{lang}.png"))
    page.close()
