"""What a class sees on a projector (issue 20), in headless Chromium at 1280×720 and 1440×900.

Pickers always show an option of the current text; a clicked cell is outlined and explained in
view; 128 tokens fill the column with readable ticks; no text of a heatmap is covered or clipped.
"""
from __future__ import annotations

import time
import urllib.parse

import pytest

from browser_utils import ARTIFACTS, chromium_missing, wait_idle

_missing = chromium_missing()
if _missing:
    print(f"SKIPPING projector browser tests: {_missing}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

EDITS = ["Alpha beta gamma.\nDelta epsilon.", "Kappa lambda mu.\nNu xi omicron.", "Sigma tau.\nPhi chi psi omega."]
FOCUS = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .find(d => d.layout && d.layout.meta && d.layout.meta.head !== undefined && d.layout.meta.stage !== 'heads')"""


def words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


def visit(chromium, url: str, width: int = 1280, height: int = 720):
    page = chromium.new_page(viewport={"width": width, "height": height})
    page.goto(url)
    try:
        wait_idle(page)
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "projector_visit_failed.png"))
        raise
    return page


def shown(page, label: str) -> str:
    """The text a selectbox displays (its input's value), found by its label."""
    return page.locator('[data-testid="stSelectbox"]', has_text=label).first.locator("input").input_value()


def type_text(page, text: str) -> None:
    area = page.locator('[data-testid="stSidebar"] textarea')
    area.fill(text)
    area.press("Control+Enter")
    wanted = urllib.parse.urlencode({"text": text})  # the sidebar writes the text into the URL on its run
    page.wait_for_function("(w) => location.search.includes(w)", arg=wanted, timeout=60_000)
    wait_idle(page)


def shows(page, label: str, prefix: str, timeout_s: float = 60) -> str:
    """Wait until the picker labelled ``label`` displays a text starting with ``prefix`` (case-insensitive),
    and still does a second later; return what it displays (the last text seen if it never does).

    MiniLM's run can outlast ``wait_idle`` (its spinner is not the status widget), so this polls; a stale
    label stays stale until the next edit, so a minute of polling still catches it."""
    deadline, text = time.time() + timeout_s, ""
    while time.time() < deadline:
        text = shown(page, label)
        if text.lower().startswith(prefix.lower()):
            page.wait_for_timeout(1000)
            return shown(page, label)
        page.wait_for_timeout(250)
    return text


def choose(page, label: str, index: int) -> None:
    page.locator('[data-testid="stSelectbox"]', has_text=label).first.locator("input").click()
    page.get_by_role("option").nth(index).click()
    wait_idle(page)


@pytest.mark.parametrize("path", ["/", "/minilm"])
def test_pickers_show_the_current_text_after_every_edit(server, chromium, path):
    """Edit the text three times; after each edit, and after picking sentence 1 and back, the pickers show it."""
    page = visit(chromium, server + path)
    for text in EDITS:
        type_text(page, text)
        first, second = (line.split()[0].rstrip(".") for line in text.splitlines())
        assert shows(page, "Sentence", f"0: {first}").lower().startswith(f"0: {first.lower()}"), text
        if path == "/":  # the explain panel's token pickers name tokens of the current text too
            assert shows(page, "Query (row)", f"0: {first}") == f"0: {first}", text
            assert shows(page, "Key (column)", f"0: {first}") == f"0: {first}", text
        choose(page, "Sentence", 1)  # the label of the other sentence must follow the text too
        assert shows(page, "Sentence", f"1: {second}").lower().startswith(f"1: {second.lower()}"), text
        choose(page, "Sentence", 0)
    page.close()
