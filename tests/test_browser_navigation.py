"""Deep links and the first visit of a fresh server, in headless Chromium.

* Every page opens by its own URL (``/explorer`` too, although the explorer is the default page
  that Streamlit serves at ``/``), with no "Page not found" dialog, its own h1, the menu's titles
  (never the file names), the link's page marked current, and the link's query parameters kept.
* A fresh server's very first visitor (Streamlit's legacy ``pages/`` mode, see ``ui/shell/nav.py``)
  never sees the file-name menu (``app``, ``explorer``, ``masks lab``…): a recorder installed
  before the page loads checks every animation frame, so a menu shown for a moment counts.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from browser_utils import ARTIFACTS, chromium_missing, streamlit_server

from ui.shell import nav

_missing = chromium_missing()
if _missing:
    print(f"SKIPPING browser navigation tests: {_missing}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]
FRESH_SERVER = True  # a server of its own (tests/conftest.py): its first test is a fresh process's first visitor

TITLES = tuple(p.title for p in nav.PAGES)  # the menu's English titles, from the page registry
STEMS = {Path(p.script).stem for p in nav.PAGES}  # Streamlit's legacy menu shows file names, "_" as a space
FILE_NAMES = {"app", *STEMS, *(stem.replace("_", " ") for stem in STEMS)}
# what each registered page's h1 starts with (tests/test_page_registry.py checks that every page is here)
H1 = {"explorer": "Attention Explorer", "minilm": "Trained model", "causal": "Trained causal model",
      "masks_lab": "Masks lab", "pipeline": "Multi-head pipeline", "modern": "Attention since 2017",
      "llm": "A real language model", "guided": "Guided lessons"}
PAGES = {  # path → (h1 starts with, menu entry marked current): every page by its own URL, the default one at / too
    "/": (H1[nav.PAGES[0].url_path], nav.PAGES[0].title),
    **{f"/{p.url_path}": (H1[p.url_path], p.title) for p in nav.PAGES},
}
QUERY = "causal=1&n_heads=4"  # shared sidebar settings: every page reads them

# Installed before any page script: records, per animation frame, every menu text and
# whether a "Page not found" dialog was ever on screen, with times since navigation start.
RECORDER = r"""
window.__nav = {menus: [], notFound: null, h1: null};
const tick = () => {
  const rec = window.__nav, now = Math.round(performance.now());
  const nav = document.querySelector('[data-testid="stSidebarNav"]');
  const text = nav ? nav.innerText : null;
  if (text && (rec.menus.length === 0 || rec.menus[rec.menus.length - 1][1] !== text)) rec.menus.push([now, text]);
  if (rec.notFound === null && document.body && document.body.innerText.includes('Page not found')) rec.notFound = now;
  const h1 = document.querySelector('h1');
  if (rec.h1 === null && h1 && h1.innerText.trim()) rec.h1 = [now, h1.innerText.trim()];
  requestAnimationFrame(tick);
};
requestAnimationFrame(tick);
"""


def menu_lines(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines() if line.strip()}


def visit(chromium, url: str, path: str, shot: str | None = None, menu_first: bool = False) -> dict:
    """Open ``url + path + ?QUERY`` and check the page; return the recorder's log."""
    h1_start, current = PAGES[path]
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.add_init_script(RECORDER)
    try:
        page.goto(f"{url}{path}?{QUERY}")
        page.wait_for_function("(t) => { const h = document.querySelector('h1');"
                               " return h && h.innerText.trim().startsWith(t); }", arg=h1_start, timeout=120_000)
        page.wait_for_selector('[data-testid="stSidebarNav"] a[aria-current="page"]', timeout=30_000)
        # the sidebar writes the shared settings back to the URL once its widgets exist
        page.get_by_role("switch", name="Causal mask").wait_for(timeout=30_000)
        page.wait_for_function("() => location.search.includes('causal=1') && location.search.includes('n_heads=4')",
                               timeout=10_000)
        if shot:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / shot))
        log = page.evaluate("window.__nav")
        nav = page.locator('[data-testid="stSidebarNav"]')
        lines = menu_lines(nav.inner_text())
        assert all(t in lines for t in TITLES), lines
        assert not lines & FILE_NAMES, lines
        assert nav.locator('a[aria-current="page"]').inner_text().split("\n")[-1].strip() == current  # after the icon
        assert page.locator("h1").first.inner_text().startswith(h1_start)
        assert page.get_by_role("switch", name="Causal mask").is_checked(), "causal=1 was not applied"
        assert "causal=1" in page.url and "n_heads=4" in page.url, page.url
        assert page.get_by_text("Page not found").count() == 0
        assert log["notFound"] is None, f"'Page not found' shown at {log['notFound']} ms"
        for at_ms, text in log["menus"]:
            assert not menu_lines(text) & FILE_NAMES, f"file-name menu shown at {at_ms} ms: {text!r}"
        if menu_first:  # the titled menu is on screen before the page's title (torch still loading)
            assert log["menus"] and log["h1"] and log["menus"][0][0] <= log["h1"][0], log
        return log
    finally:
        page.close()


def test_first_visitor_at_root_never_sees_file_names(server, chromium):
    """The module's server is fresh here: this is its first visitor (keep this test first)."""
    visit(chromium, server, "/", shot="nav_first_visit_root.png", menu_first=True)


@pytest.mark.parametrize("path", list(PAGES))
def test_deep_link_on_a_warm_server(server, chromium, path):
    visit(chromium, server, path)


@pytest.mark.parametrize("path", ["/explorer", "/minilm", "/masks_lab", "/pipeline"])
def test_first_visitor_by_deep_link_on_a_fresh_server(chromium, path):
    with streamlit_server() as url:
        visit(chromium, url, path, shot=f"nav_first_visit_{path.strip('/')}.png")
