"""In Chromium at 1280×720: the camera's notices ("Preparing image…", "Image download succeeded") sit in the page's
header strip, where they cover no control (they sat over the Head picker at the top right for ~3 s)."""
from __future__ import annotations

import pytest

from browser_utils import ARTIFACTS, chromium_missing, wait_idle

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

COVERED = """() => {
    const notes = Array.from(document.querySelectorAll('.plotly-notifier .notifier-note')).map(n => n.getBoundingClientRect());
    const controls = Array.from(document.querySelectorAll(
        'input, button, textarea, [role="radio"], [role="tab"], [data-baseweb="select"], a'))
        .filter(c => { const r = c.getBoundingClientRect(); return r.width > 0 && r.height > 0
                       && getComputedStyle(c).visibility !== 'hidden'; })
        .filter(c => !c.closest('.plotly-notifier'))
        .filter(c => { const r = c.getBoundingClientRect();  // drawn, not scrolled under the page's header
                       const x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
                       if (y < 0 || y > innerHeight) return false;
                       const shown = Array.from(document.querySelectorAll('.plotly-notifier'));
                       shown.forEach(n => n.style.visibility = 'hidden');
                       const top = document.elementFromPoint(x, y);
                       shown.forEach(n => n.style.visibility = '');
                       return top && (c.contains(top) || top.contains(c)); });
    const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    return {notes: notes.map(r => [r.left, r.top, r.right, r.bottom]),
            covered: controls.filter(c => notes.some(n => hit(n, c.getBoundingClientRect())))
                             .map(c => (c.getAttribute('aria-label') || c.textContent || c.tagName).slice(0, 40))};
}"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_camera_notice_covers_no_control(server, chromium, lang):
    page = chromium.new_page(viewport={"width": 1280, "height": 720}, accept_downloads=True)
    page.goto(f"{server}/explorer?lang={lang}")
    wait_idle(page)
    chart = page.locator(".js-plotly-plot").first
    chart.scroll_into_view_if_needed()
    chart.hover()
    page.locator(".js-plotly-plot").first.locator(".modebar-btn").first.click()
    page.wait_for_selector(".plotly-notifier .notifier-note", timeout=10_000)
    found = page.evaluate(COVERED)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"camera_notice_{lang}.png"))
    page.close()
    assert found["notes"] and not found["covered"], found
