#!/usr/bin/env python
"""Screenshots of every page at 1280×720 (a classroom projector) into ``docs/images/``.

Starts a fresh ``streamlit run app.py``, opens each page in headless Debian Chromium as a
student would (a link with a 12-token sentence), waits until every chart is drawn, and saves
``docs/images/page_<name>.png``::

    python scripts/screenshot_pages.py            # all pages
    python scripts/screenshot_pages.py --out /tmp # elsewhere
    python scripts/screenshot_pages.py --lang zh  # in Chinese, with Chinese sentences: page_<name>_zh.png
    python scripts/screenshot_pages.py --size 1440x900  # a larger projector: page_<name>_1440.png
    python scripts/screenshot_pages.py --chart streamlit --out /tmp/ref  # charts by st.plotly_chart, to compare

``--chart streamlit`` starts the server with ``ATTENTION_CHART=streamlit`` (ui/shell/chart.py's fallback) and
hides the fallback's one-line note before each screenshot, so the two sets compare pixel for pixel.
"""
from __future__ import annotations

import argparse
import os
import sys
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from browser_utils import browser, chromium_missing, streamlit_server, wait_idle  # noqa: E402
from ui.shell.chart import ENV as CHART_ENV  # noqa: E402

TWELVE = "The animal didn't cross the street because it was too tired."
PAGES = {  # name → path, query, and optionally a text to scroll to
    "explorer": ("/", {"text": TWELVE, "causal": 1}),
    "explain": ("/", {"text": TWELVE, "causal": 1, "q": 8, "k": 1, "head": 2}, "Explain this number"),
    "explorer_128_tokens": ("/", {"text": " ".join(f"w{i}" for i in range(128)), "d_model": 96, "n_heads": 12,
                                   "causal": 1, "scale": "row"}, "each row"),  # scrolled to the full-width head
    "minilm": ("/minilm", {"text": TWELVE, "layer": 2, "head": 9}),
    "masks_lab": ("/masks_lab", {"text": TWELVE + "\nIt was tired.", "mask": "both"}),
    "pipeline": ("/pipeline", {"text": TWELVE, "step": "Attention"}),
    "causal": ("/causal", {"layer": 1, "head": 1, "checkpoint": 4000}, "All 2 layers"),  # the induction stripe, scrolled to
    "modern": ("/modern", {"text": TWELVE, "section": "Positions"}),
    "llm": ("/llm", {}),  # its own example prompt
    "guided": ("/guided", {"text": TWELVE, "lesson": 1, "step": 2}),
}


ZH_TEXT = "我们今天学习注意力机制，因为它很有用。"  # jieba: 我们 / 今天 / 学习 / 注意力 / 机制 / ， / 因为 / …
ZH_PAGES = {  # the same views in Chinese (?lang=zh); texts to scroll to are the Chinese headings
    "explorer": ("/", {"text": ZH_TEXT, "causal": 1}),
    "explain": ("/", {"text": ZH_TEXT, "causal": 1, "q": 5, "k": 1, "head": 2}, "解释这个数"),
    "minilm": ("/minilm", {"text": ZH_TEXT + "\nThe cat sat on the mat.", "layer": 2, "head": 9}),
    "masks_lab": ("/masks_lab", {"text": ZH_TEXT + "\n猫累了。", "mask": "both"}),
    "pipeline": ("/pipeline", {"text": ZH_TEXT, "step": "Attention"}),
    "causal": ("/causal", {"layer": 1, "head": 1, "checkpoint": 4000}, "全部 2 层"),
    "modern": ("/modern", {"text": ZH_TEXT, "section": "Positions"}),
    "llm": ("/llm", {}),  # its own Chinese example prompt
    "guided": ("/guided", {"text": ZH_TEXT, "lesson": 1, "step": 2}),
}
# every page of the registry (ui/shell/nav.py) is here, checked by tests/test_page_registry.py; the extra names
# are more views of a page
# The fallback's note (ui/shell/chart.py _note_fallback) names the variable in every language: its element
# container is taken out of the page (with its gap), as if the note were not there.
HIDE_NOTE = f"""() => {{ for (const c of document.querySelectorAll('[data-testid="stCaptionContainer"]'))
    if (c.textContent.includes('{CHART_ENV}=streamlit'))
        (c.closest('[data-testid="stElementContainer"]') || c).style.display = 'none'; }}"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--lang", choices=("en", "zh"), default="en", help="the app's language (default en)")
    parser.add_argument("--size", choices=("1280x720", "1440x900"), default="1280x720", help="the window (default 1280x720)")
    parser.add_argument("--chart", choices=("element", "streamlit"), default="element",
                        help="our Plotly element (default) or st.plotly_chart, the fallback, for comparison")
    args = parser.parse_args()
    if args.chart == "streamlit":
        os.environ[CHART_ENV] = "streamlit"  # the server inherits it
    else:
        os.environ.pop(CHART_ENV, None)
    pages = ZH_PAGES if args.lang == "zh" else PAGES
    width, height = map(int, args.size.split("x"))
    suffix = ("_zh" if args.lang == "zh" else "") + ("" if width == 1280 else f"_{width}")
    if (why := chromium_missing()):
        print(f"cannot take screenshots: {why}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    with streamlit_server() as url, browser() as chromium:
        for name, (path, query, *scroll) in pages.items():
            page = chromium.new_page(viewport={"width": width, "height": height})
            page.goto(f"{url}{path}?{urllib.parse.urlencode({**query, 'lang': args.lang})}")
            wait_idle(page)
            if args.chart == "streamlit":
                page.evaluate(HIDE_NOTE)
                page.wait_for_timeout(300)
            if scroll:
                page.get_by_text(scroll[0]).first.evaluate("el => el.scrollIntoView({block: 'start'})")
                page.wait_for_timeout(500)
            target = args.out / f"page_{name}{suffix}.png"
            page.screenshot(path=str(target))
            print(target.relative_to(ROOT) if target.is_relative_to(ROOT) else target)
            page.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
