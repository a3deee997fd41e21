"""In Chromium at 1280×720: the sidebar's pickers show their whole choice, English and 中文, each tokenizer (the
tokenizer's names were cut: "Word-level (Chinese words, punc…", 322 px of text in a 206-px box)."""
from __future__ import annotations

import pytest

from browser_utils import chromium_missing, wait_idle

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

SHOWN = """() => Array.from(document.querySelectorAll('[data-testid="stSidebar"] [data-testid="stSelectbox"] input'))
    .map(i => ({label: i.getAttribute('aria-label'), value: i.value, text: i.scrollWidth, box: i.clientWidth}))"""


@pytest.mark.parametrize("lang, tokenizer", [("en", "word"), ("zh", "wordpiece")])
def test_no_sidebar_picker_cuts_its_choice(server, chromium, lang, tokenizer):
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}/?lang={lang}&tokenizer={tokenizer}")
    wait_idle(page)
    shown = page.evaluate(SHOWN)
    page.close()
    print(f"\n{lang} {tokenizer}: {shown}")
    assert len(shown) >= 3 and all(s["value"] for s in shown), shown  # tokenizer, d_model, n_heads
    assert all(s["text"] <= s["box"] for s in shown), [s for s in shown if s["text"] > s["box"]]
