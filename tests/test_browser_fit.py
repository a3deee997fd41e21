"""At 1280×720 (a classroom projector), in headless Chromium: sidebar controls that do nothing on a page are
disabled with the reason and cannot rerun it; the tables that were cut off fit; the focused figure's caption
(now its header) is in view.
"""
from __future__ import annotations

import urllib.parse

import pytest

from browser_utils import chromium_missing, wait_idle

_missing = chromium_missing()
if _missing:
    print(f"SKIPPING fit browser tests: {_missing}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

TWELVE = "The animal didn't cross the street because it was too tired."
SIDEBAR = {  # label → how to find its input in the sidebar
    "text": 'textarea', "tokenizer": '[data-testid="stSelectbox"]:has-text("Tokenizer") input',
    "causal": '[data-testid="stCheckbox"]:has-text("Causal mask") input',
    "padding": '[data-testid="stCheckbox"]:has-text("Padding mask") input',
    "d_model": '[data-testid="stSelectbox"]:has-text("d_model") input',
    "n_heads": '[data-testid="stSelectbox"]:has-text("n_heads") input',
    "seed": '[data-testid="stNumberInput"] input',
}


def visit(chromium, url: str):
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(url)
    wait_idle(page)
    return page


def disabled(page) -> dict[str, bool]:
    side = page.locator('[data-testid="stSidebar"]')
    return {name: side.locator(sel).first.is_disabled() for name, sel in SIDEBAR.items()}


def grid_fit(page, header: str) -> dict:
    """Widths of the data grid whose header row holds ``header``: its visible width and its content's.

    The grid's accessible table holds only the columns drawn, so a column cut off finds no grid at all."""
    found = page.evaluate("""(header) => {
        const el = Array.from(document.querySelectorAll('[data-testid="stDataFrame"]'))
            .find(e => e.querySelector('table') && e.querySelector('table').innerText.includes(header));
        if (!el) return null;
        const sc = el.querySelector('.dvn-scroller'), r = el.getBoundingClientRect();
        return {scroll: sc.scrollWidth, client: sc.clientWidth, right: r.right, width: window.innerWidth};
    }""", header)
    assert found is not None, f"no table shows a column {header!r} (cut off?)"
    return found


@pytest.mark.parametrize("path, live", [
    ("/minilm", {"text", "padding"}),
    ("/causal", set()),
    ("/", set(SIDEBAR)),
])
def test_controls_that_do_nothing_are_disabled_with_the_reason(server, chromium, path, live):
    page = visit(chromium, f"{server}{path}?" + urllib.parse.urlencode({"text": TWELVE, "d_model": 32, "n_heads": 4}))
    if path != "/":
        page.wait_for_timeout(2000)  # MiniLM and the causal model take longer than the status widget shows
    assert disabled(page) == {name: name not in live for name in SIDEBAR}, path
    reason = page.locator('[data-testid="stSidebar"]').get_by_text("Greyed out here")
    assert reason.count() == (0 if path == "/" else 1)
    if path != "/":
        url = page.url
        page.locator('[data-testid="stSidebar"] [data-testid="stCheckbox"]:has-text("Causal mask")').click(force=True)
        page.wait_for_timeout(1500)
        assert page.url == url and not page.locator('[data-testid="stStatusWidget"]').count()  # no rerun
        assert "d_model=32" in url and "n_heads=4" in url  # kept for the other pages
    page.close()


def test_tables_fit_at_1280(server, chromium):
    page = visit(chromium, f"{server}/minilm?" + urllib.parse.urlencode({"text": TWELVE + "\nIt was tired."}))
    page.get_by_text("Per-head statistics").first.scroll_into_view_if_needed()
    page.wait_for_timeout(1000)
    stats = grid_fit(page, "to [PAD]")
    assert stats["scroll"] <= stats["client"] and stats["right"] <= stats["width"], stats  # "to [PAD]" not cut off
    page.close()
    page = visit(chromium, f"{server}/masks_lab?" + urllib.parse.urlencode(
        {"text": TWELVE + "\nIt was tired.", "section": "Dropout", "train": 1}))
    page.get_by_text("Row sums").first.scroll_into_view_if_needed()
    page.wait_for_timeout(1000)
    sums = grid_fit(page, "after")
    assert sums["scroll"] <= sums["client"] and sums["right"] <= sums["width"], sums  # the "after" column shows
    print(f"\nMiniLM statistics: {stats['scroll']} of {stats['client']} px; dropout row sums: "
          f"{sums['scroll']} of {sums['client']} px")
    page.close()


def test_the_focused_figure_says_what_it_shows_in_view(server, chromium):
    """The focused figure's title is above it, in view unscrolled at 1280×720; its caption (colour range, sentence
    and settings) is under it, inside the chart (reached by scrolling, as the figure's last rows)."""
    page = visit(chromium, f"{server}/?" + urllib.parse.urlencode({"text": TWELVE, "causal": 1}))
    found = page.evaluate("""() => { const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
            .find(d => d.layout.meta && d.layout.meta.head !== undefined && d.layout.meta.stage !== 'heads');
        const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom, e.textContent]; };
        return {title: box(d.querySelector('.annotation-text')), caption: box(d.querySelector('.gtitle')),
                plot: box(d.querySelector('g.hm image')), chart: box(d.querySelector('.main-svg'))}; }""")
    title, caption, plot, chart = found["title"], found["caption"], found["plot"], found["chart"]
    assert 0 <= title[1] and title[3] <= 720 and title[3] <= plot[1], title
    assert title[4] == "head 0 · Attention weights softmax(·)", title
    assert plot[3] <= caption[1] and caption[3] <= chart[3] and caption[2] <= chart[2], (caption, plot, chart)
    text = caption[4].replace(" ", "")  # wrapped lines join without a space
    assert "colours0–" in text and "causal+paddingmask" in text and "sentence0:“" in text, caption
    print(f"\nexplorer at 1280×720: title at y {title[1]:.0f}–{title[3]:.0f}, cells {plot[1]:.0f}–{plot[3]:.0f}, "
          f"caption {caption[1]:.0f}–{caption[3]:.0f}")
    page.close()
