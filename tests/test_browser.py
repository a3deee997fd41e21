"""A real browser against a fresh `streamlit run` server: type, toggle, check heatmaps, screenshot."""
from __future__ import annotations

from pathlib import Path

import pytest

from browser_utils import ARTIFACTS, CHART, chromium_missing, plot_data, wait_idle

pytestmark = pytest.mark.browser
_missing = chromium_missing()
if _missing:
    print(f"SKIPPING browser tests: {_missing}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]
FRESH_SERVER = True  # a server of its own (tests/conftest.py): its first test is a fresh process's first visitor


def new_page(chromium):
    return chromium.new_page(viewport={"width": 1400, "height": 1000})


def test_first_visitor_by_deep_link_sees_titles_and_the_page(server, chromium):
    """A fresh server's first visitor (Streamlit's legacy pages/ mode) gets the real navigation."""
    page = new_page(chromium)
    page.goto(f"{server}/masks_lab?causal=1")
    page.wait_for_selector(CHART, timeout=120_000)
    nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
    assert "Explorer" in nav and "Masks lab" in nav
    assert "masks_lab" not in nav and "\napp\n" not in f"\n{nav}\n"
    assert page.locator("h1").first.inner_text().lower().startswith("masks")
    assert page.get_by_text("Page not found").count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "masks_lab.png"))
    page.close()


def test_type_toggle_causal_and_see_the_heatmaps(server, chromium):
    page = new_page(chromium)
    page.goto(f"{server}/?n_heads=4&causal=0&stage=masked_scores")
    wait_idle(page)
    box = page.get_by_role("textbox", name="Sentences (one per line)")
    box.fill("the cat saw the cat")
    box.press("Control+Enter")
    page.wait_for_function("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                           ".some(d => d.layout && d.layout.meta && d.layout.meta.stage === 'masked_scores' "
                           "&& d._fullData[0].z.length === 5)", timeout=120_000)
    wait_idle(page)
    (z,) = plot_data(page, "masked_scores")  # the focused head
    assert all(v is not None for row in z for v in row)  # no mask yet
    page.get_by_test_id("stSidebarUserContent").get_by_text("Causal mask").click()
    page.wait_for_function("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                           ".some(d => d.layout && d.layout.meta && d.layout.meta.stage === 'masked_scores' "
                           "&& !Number.isFinite(d._fullData[0].z[0][1]))", timeout=120_000)
    wait_idle(page)
    (z,) = plot_data(page, "masked_scores")
    assert all(z[i][j] is None for i in range(5) for j in range(i + 1, 5))  # blocked: blank
    assert all(z[i][j] is not None for i in range(5) for j in range(i + 1))
    assert "causal=1" in page.url and "the+cat" in page.url.replace("%20", "+")
    page.get_by_text("Tokens, downloads and reopening a saved trace").click()
    with page.expect_download() as download:
        page.get_by_role("button", name="Masked scores as CSV").click()
    assert download.value.suggested_filename.startswith("masked_scores_L0_the-cat-saw")
    raw = Path(download.value.path()).read_bytes()
    assert raw.startswith("\ufeff".encode())  # a byte-order mark: Excel reads the tokens as UTF-8
    csv_lines = raw.decode("utf-8-sig").splitlines()
    assert csv_lines[0].startswith("head,query \\ key,0: the,1: cat,2: saw,3: the,4: cat")
    assert csv_lines[1].startswith("0,0: the,") and csv_lines[1].endswith(",,,,")  # causal: blank future keys
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "explorer_causal.png"))
    page.close()
