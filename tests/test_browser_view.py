"""The explorer as a class sees it, in headless Chromium at projector sizes: the focused head above the
fold, tick labels that do not overlap, cells that never vanish, and a link that reopens the same view."""
from __future__ import annotations

import re
import urllib.parse

import pytest

from browser_utils import ARTIFACTS, cell_centre, chromium_missing, drawn_figures, transparent_shares, wait_idle

_missing = chromium_missing()
if _missing:
    print(f"SKIPPING browser view tests: {_missing}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

TWELVE = "The animal didn't cross the street because it was too tired."  # 12 word-level tokens


def words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


def visit(chromium, url: str, width: int = 1280, height: int = 720):
    page = chromium.new_page(viewport={"width": width, "height": height})
    page.goto(url)
    wait_idle(page)
    return page


def focus_box(page) -> dict:
    """Bounding box of the focused head's drawn heatmap image."""
    return page.evaluate("""() => {
        const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
            .find(d => d.layout && d.layout.meta && d.layout.meta.head !== undefined);
        const r = d.querySelector('g.hm image').getBoundingClientRect();
        return {top: r.top, bottom: r.bottom, left: r.left, right: r.right};
    }""")


@pytest.mark.parametrize("width, height", [(1280, 720), (1440, 900)])
def test_focused_heatmap_is_above_the_fold_with_the_default_text(server, chromium, width, height):
    page = visit(chromium, server + "/", width, height)
    box = focus_box(page)
    assert box["top"] >= 0 and box["bottom"] <= height, box  # every cell visible without scrolling
    assert box["right"] - box["left"] >= 250, box  # and large
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"explorer_{width}x{height}.png"))
    page.close()


def test_tick_labels_do_not_overlap_at_twelve_tokens(server, chromium):
    page = visit(chromium, f"{server}/?text={urllib.parse.quote(TWELVE)}")
    boxes = page.evaluate("""() => {
        const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
            .find(d => d.layout && d.layout.meta && d.layout.meta.head !== undefined);
        const get = sel => Array.from(d.querySelectorAll(sel)).map(t => {
            const r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom, t.textContent]; });
        return {x: get('.xtick text'), y: get('.ytick text')};
    }""")
    for axis in ("x", "y"):
        labels = boxes[axis]
        assert len(labels) == 12, labels  # every token labelled
        for i in range(len(labels)):
            for j in range(i + 1, len(labels)):
                a, b = labels[i], labels[j]
                overlap = min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5
                assert not overlap, (axis, a, b)
    page.close()


@pytest.mark.parametrize("n", [12, 64, 128])
@pytest.mark.parametrize("stage", ["scores", "weights"])
def test_cells_never_vanish(server, chromium, n, stage):
    query = urllib.parse.urlencode({"text": words(n), "n_heads": 4, "causal": 1, "stage": stage})
    page = visit(chromium, f"{server}/?{query}", 1400, 900)
    shares = transparent_shares(page)
    assert len(shares) == 2, shares  # the focused head and the tiles
    for s in shares:
        # transparent pixels only where a cell is blank (masked, or a gutter between tiles)
        assert s["transparent"] <= s["blank"] + 0.05, s
    page.close()


def test_a_link_opens_the_same_view(server, chromium):
    page = visit(chromium, f"{server}/?" + urllib.parse.urlencode({"text": "the cat sat\nthe dog ran far away",
                                                                   "n_heads": 4}))
    page.locator('[data-testid="stSelectbox"]', has_text="Sentence").locator("input").click()
    page.get_by_role("option", name="1: the dog ran far away").click()
    wait_idle(page)
    page.locator('[data-testid="stButtonGroup"] button', has_text="masked").click()
    wait_idle(page)
    # click the centre of head 2's tile in the all-heads figure (a transparent marker sits there)
    marker = page.evaluate("""() => {
        const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
            .find(d => d.layout && d.layout.meta && d.layout.meta.stage === 'heads');
        const r = d.querySelectorAll('.scatterlayer .point')[2].getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2];
    }""")
    page.mouse.click(*marker)
    page.wait_for_function("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                           ".some(d => d.layout && d.layout.meta && d.layout.meta.head === 2)", timeout=60_000)
    wait_idle(page)
    page.locator('[data-testid="stButtonGroup"] button', has_text="0 – 1").click()  # (was the "Fixed 0–1" toggle)
    wait_idle(page)
    url, before = page.url, drawn_figures(page)
    assert {"stage=masked_scores", "head=2", "sentence=1", "scale=fixed"} <= set(urllib.parse.urlparse(url).query
                                                                                 .split("&")), url
    page.close()

    context = chromium.new_context(viewport={"width": 1280, "height": 720})  # a new browser: no session
    fresh = context.new_page()
    fresh.goto(url)
    wait_idle(fresh)
    after = drawn_figures(fresh)
    assert [f["meta"] for f in after] == [f["meta"] for f in before]
    assert [f["z"] for f in after] == [f["z"] for f in before]
    context.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_cell_click_explains_it_at_60_tokens_and_the_hover_says_so(server, chromium, lang):
    """Our element reads a click on the heatmap itself (ui/shell/chart.py cell_clicks): at 60 tokens, where
    st.plotly_chart had no cell markers (only the pickers worked), a click on cell (50, 7) opens its explanation; the
    hover names the cell and says to click in the page's language; no marker trace is drawn."""
    words = " ".join(f"w{i}" for i in range(60))
    page = visit(chromium, f"{server}/?" + urllib.parse.urlencode({"text": words, "causal": 1, "lang": lang}))
    focus = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout && d.layout.meta && d.layout.meta.cells)"""
    assert page.evaluate(f"() => ({focus})().data.map(t => t.name)").count("cells") == 0
    x, y = cell_centre(page, focus, 50, 7, scroll=True)
    page.mouse.move(x, y)
    hover = page.locator(".hoverlayer .hovertext").first
    hover.wait_for(timeout=10_000)
    text = hover.text_content()
    assert "w50" in text and "w7" in text and {"en": "click to explain", "zh": "点击查看解释"}[lang] in text, text
    page.mouse.click(x, y)
    page.wait_for_function("() => location.search.includes('q=50') && location.search.includes('k=7')",
                           timeout=60_000)
    wait_idle(page)
    answers = page.evaluate("""() => Array.from(document.querySelectorAll('[data-testid="stMarkdownContainer"]'))
        .map(e => e.innerText).filter(t => t.includes('→'))""")
    assert any(re.search(r"(q|查询) 50:\W*w50\W*→ (k|键) 7:\W*w7", t) for t in answers), answers
    page.close()


def test_clicking_a_cell_explains_it(server, chromium):
    page = visit(chromium, f"{server}/?" + urllib.parse.urlencode({"text": "the cat sat on the mat", "causal": 1}),
                 1280, 1400)
    query, key = 4, 1
    point = cell_centre(page, """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout && d.layout.meta && d.layout.meta.head !== undefined)""", query, key)
    page.mouse.click(*point)
    page.wait_for_function("() => location.search.includes('q=4') && location.search.includes('k=1')",
                           timeout=60_000)
    wait_idle(page)
    panel = page.locator('[data-testid="stMarkdownContainer"], .katex').all_inner_texts()
    assert any("s4,1" in t.replace(" ", "").replace("\n", "") or "s_{4,1}" in t for t in panel), panel[:20]
    page.get_by_text("Explain this number").scroll_into_view_if_needed()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "explain_panel.png"))
    page.close()


def test_a_click_at_the_end_of_a_fast_move_takes_the_cell_under_the_pointer(server, chromium):
    """plotly.js's hover is throttled (one per 50 ms), and its click names the cell of the last hover: a click
    right after the pointer crossed another cell (an attack's find) explained that other cell. Our element reads
    the cell under the pointer (ui/shell/chart.js ``cell``)."""
    page = visit(chromium, f"{server}/?" + urllib.parse.urlencode({"text": "a b c d e f g h i j k l", "causal": 0}))
    focus = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout && d.layout.meta && d.layout.meta.cells)"""
    first, then = cell_centre(page, focus, 3, 2, scroll=True), cell_centre(page, focus, 9, 8)
    page.mouse.move(*first)
    page.locator(".hoverlayer .hovertext").first.wait_for(timeout=10_000)  # the hover of cell (3, 2) is drawn
    page.mouse.move(2, 700)
    page.wait_for_timeout(300)
    page.mouse.move(*first)  # a hover computed now: the next one waits 50 ms
    page.mouse.click(*then)
    page.wait_for_function("() => { const s = new URLSearchParams(location.search); "
                           "return s.get('q') !== '0' || s.get('k') !== '0'; }", timeout=60_000)
    wait_idle(page)
    query = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)
    assert (query["q"], query["k"]) == (["9"], ["8"]), page.url
    page.close()
