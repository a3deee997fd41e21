"""What a class sees on a projector, in headless Chromium at 1280×720 and 1440×900.

Pickers always show an option of the current text; a clicked cell is outlined and explained in
view; 128 tokens fill the column with readable ticks; no text of a heatmap is covered or clipped.
"""
from __future__ import annotations

import re
import time
import urllib.parse

import pytest

from browser_utils import ARTIFACTS, cell_centre, chromium_missing, wait_idle

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


def chart_boxes(page, which: str) -> dict:
    """Boxes (left, top, right, bottom, text) of a chart's texts, its own box, its plot area and its modebar.

    ``which``: "focus" (the focused head) or "heads" (the tiles)."""
    return page.evaluate("""(which) => {
        const d = Array.from(document.querySelectorAll('.js-plotly-plot')).find(d => d.layout && d.layout.meta
            && (which === 'heads' ? d.layout.meta.stage === 'heads'
                                  : d.layout.meta.head !== undefined && d.layout.meta.stage !== 'heads'));
        const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom, e.textContent]; };
        const texts = sel => Array.from(d.querySelectorAll(sel)).filter(t => t.textContent.trim()).map(box);
        const modebar = d.querySelector('.modebar');
        return {chart: box(d.querySelector('.main-svg')), plot: box(d.querySelector('g.hm image') || d.querySelector('.nsewdrag')),
                x: texts('.xtick text'), y: texts('.ytick text'),
                titles: texts('.gtitle, .g-xtitle text, .g-ytitle text, .annotation-text, .colorbar text'),
                modebar: modebar ? box(modebar) : null, meta: d.layout.meta,
                sizes: Array.from(d.querySelectorAll('.xtick text, .ytick text'))
                    .map(t => parseFloat(getComputedStyle(t).fontSize))};
    }""", which)


def overlap(a, b, slack: float = 0.5) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > slack and min(a[3], b[3]) - max(a[1], b[1]) > slack


def too_close(a, b, axis: str, font_px: float) -> bool:
    """Two neighbouring tick labels closer than one font size (centre to centre) across the axis.

    A label's box is its line box (1.3 × the font size); ink is about one font size, so neighbours one font size
    apart are readable, as in a printed table."""
    i = 0 if axis == "x" else 1
    return abs((a[i] + a[i + 2]) / 2 - (b[i] + b[i + 2]) / 2) < font_px - 0.25


@pytest.mark.parametrize("width, height", [(1280, 720), (1440, 900)])
def test_a_clicked_cell_is_outlined_and_answered_in_view(server, chromium, width, height):
    """Click cell (4, 1) with the mouse: the cell is framed, the focused head's tile too, and the answer's first line
    (score, weight, the row's softmax) is inside the viewport without scrolling."""
    page = visit(chromium, f"{server}/?" + urllib.parse.urlencode({"text": "the cat sat on the mat", "causal": 1,
                                                                    "head": 2}), width, height)
    query, key = 4, 1
    point = cell_centre(page, FOCUS, query, key)
    assert 0 <= point[1] <= height, point  # the cell is clickable without scrolling
    start = time.perf_counter()
    page.mouse.click(*point)
    page.wait_for_function(f"""() => {{ const d = ({FOCUS})();
        return d && d.layout.meta.cell && d.layout.meta.cell[0] === {query} && d.layout.meta.cell[1] === {key}
               && d.querySelector('.shapelayer path'); }}""", timeout=60_000)
    drawn = time.perf_counter() - start
    # user text goes through ui.markdown.plain (an escaped colon and a word joiner): match around it
    answer = page.get_by_text(re.compile(rf"q {query}:\W* the → k {key}:\W* cat")).first
    answer.wait_for(timeout=60_000)
    answered = time.perf_counter() - start
    wait_idle(page)
    assert page.evaluate("() => window.scrollY") == 0 and page.evaluate(
        "() => document.querySelector('[data-testid=\"stMain\"]').scrollTop || 0") == 0
    frame = page.evaluate(f"""() => {{ const r = ({FOCUS})().querySelector('.shapelayer path').getBoundingClientRect();
        return [r.left, r.top, r.right, r.bottom]; }}""")
    assert frame[0] < point[0] < frame[2] and frame[1] < point[1] < frame[3], (frame, point)  # around the clicked cell
    assert frame[2] - frame[0] < 120 and frame[3] - frame[1] < 120, frame  # one cell, not the figure
    box = answer.bounding_box()
    assert box and 0 <= box["y"] and box["y"] + box["height"] <= height and box["x"] + box["width"] <= width, box
    text = answer.evaluate("e => e.closest('[data-testid=\"stMarkdownContainer\"]').innerText")
    weight = page.evaluate(f"() => ({FOCUS})()._fullData[0].z[{query}][{key}]")
    assert f"weight {weight:.4f}" in text and "score" in text and "e^(s − m)" in text, text
    tiles = chart_boxes(page, "heads")
    assert tiles["meta"]["focus"] == 2
    print(f"\n{width}×{height}: click → outline drawn {drawn:.2f} s, → answer shown {answered:.2f} s; "
          f"answer line at y {box['y']:.0f}–{box['y'] + box['height']:.0f}")
    page.close()


def test_128_tokens_fill_the_column_with_readable_ticks(server, chromium):
    page = visit(chromium, f"{server}/?" + urllib.parse.urlencode({"text": words(128), "d_model": 96, "n_heads": 12,
                                                                    "causal": 1}))
    b = chart_boxes(page, "focus")
    width = b["plot"][2] - b["plot"][0]
    assert width >= 600, b["plot"]
    assert min(b["sizes"]) >= 10, sorted(set(b["sizes"]))
    print(f"\n128 tokens at 1280×720: plot area {width:.0f} × {b['plot'][3] - b['plot'][1]:.0f} px, "
          f"tick labels {min(b['sizes']):.0f}–{max(b['sizes']):.0f} px, {len(b['x'])} key labels")
    page.close()
    page = visit(chromium, f"{server}/?" + urllib.parse.urlencode({"text": words(64), "causal": 1, "scale": "row"}))
    b = chart_boxes(page, "focus")
    # every 2nd token labelled: one label per token ran into its neighbours (layout audit, docs/layout-audit.md)
    assert len(b["x"]) == 32 and len(b["y"]) == 32 and min(b["sizes"]) >= 10
    z = page.evaluate(f"() => Array.from(({FOCUS})()._fullData[0].z, r => Math.max(...Array.from(r).filter(Number.isFinite)))")
    assert b["meta"]["row_scale"] and all(abs(m - 1) < 1e-6 for m in z), z[:5]  # each row by its own maximum
    assert "scale=row" in page.url
    page.close()


# the widest labels: Chinese words (two columns a character) and English cut at 12 characters with "…"
WIDE_LABELS = "我们今天学习注意力机制 internationalization 变换器模型的多头注意力 counterrevolutionaries 好"


@pytest.mark.parametrize("width, height", [(1280, 720), (1440, 900)])
@pytest.mark.parametrize("n", [12, 60, 128, "wide labels"])
def test_no_heatmap_text_is_covered_or_clipped(server, chromium, width, height, n):
    """Every tick label, title and caption of the focused head and the tiles inside its chart and the window (the
    margins are made by the figure builder, not Plotly's automargin), none under the toolbar, none too close."""
    text = WIDE_LABELS if n == "wide labels" else words(n)
    page = visit(chromium, f"{server}/?" + urllib.parse.urlencode({"text": text, "causal": 1}), width, height)
    for which in ("focus", "heads"):
        page.hover('.js-plotly-plot' if which == "focus" else '.js-plotly-plot >> nth=1')
        page.wait_for_timeout(300)
        b = chart_boxes(page, which)
        chart = b["chart"]
        for t in b["x"] + b["y"] + b["titles"]:
            assert chart[0] - 1 <= t[0] and t[2] <= chart[2] + 1 and chart[1] - 1 <= t[1] and t[3] <= chart[3] + 1, \
                (which, "outside its chart", t, chart)
            assert 0 <= t[0] and t[2] <= width, (which, "outside the window", t)
            if b["modebar"] and b["modebar"][2] > b["modebar"][0]:
                assert not overlap(t, b["modebar"]), (which, "under the toolbar", t, b["modebar"])
        for axis in ("x", "y"):
            labels = b[axis]
            for i in range(len(labels) - 1):
                assert not too_close(labels[i], labels[i + 1], axis, min(b["sizes"])), (which, axis, labels[i],
                                                                                         labels[i + 1])
    page.close()
