"""Regression (real browser): long pastes and long emoji links in the sentence box.

Streamlit's ``max_chars`` counts UTF-16 units in the browser and silently refused a paste over
the limit, and a link with >1000 emoji froze the box. The box now has no ``max_chars``; the app
cuts text to 2000 code points itself and says so. Each module starts its own fresh server
(``tests/test_browser.py`` needs a fresh one for its first-visitor check).
"""
from __future__ import annotations

import urllib.parse

import pytest

from browser_utils import chromium_missing

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]
FRESH_SERVER = True  # its own server (tests/conftest.py): its attacks must not reach the one others share
BOX = "Sentences (one per line)"


def _open(chromium, url):
    context = chromium.new_context(viewport={"width": 1400, "height": 1000},
                                   permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.goto(url)
    page.get_by_role("textbox", name=BOX).wait_for(timeout=120_000)
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=120_000)
    return context, page


def test_pasting_a_long_text_keeps_it_or_says_it_was_cut(server, chromium):
    context, page = _open(chromium, f"{server}/?text=hi")
    try:
        long = " ".join(["The quick brown fox jumps over the lazy dog."] * 50)  # 2249 characters
        page.evaluate("(t) => navigator.clipboard.writeText(t)", long)
        box = page.get_by_role("textbox", name=BOX)
        box.click()
        page.keyboard.press("Control+a")
        page.keyboard.press("Control+v")
        page.wait_for_timeout(500)
        assert box.input_value() != "hi", "the pasted text vanished without a note"
    finally:
        context.close()


def test_a_long_emoji_link_leaves_the_box_editable(server, chromium):
    text = "😀" * 1999 + "x"  # 2000 code points: accepted by the app without a note
    context, page = _open(chromium, f"{server}/?text={urllib.parse.quote(text)}")
    try:
        box = page.get_by_role("textbox", name=BOX)
        n_before = len(box.input_value())
        box.click()
        page.keyboard.press("Control+End")
        page.keyboard.press("Backspace")
        page.wait_for_timeout(300)
        n_after = len(box.input_value())
        assert n_after < n_before, f"Backspace did nothing ({n_before} characters before and after)"
    finally:
        context.close()
