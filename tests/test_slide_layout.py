"""One slide layout for every export path, measured in headless Chromium.

Each path is rendered the way a user gets it and its drawn text boxes are measured:

* ``attention-export`` SVG (kaleido + the system Chromium), one head and every head: SVG text bounding boxes;
* ``attention-export --format html`` (MiniLM, every head) and the app's offline HTML download: the DOM's
  ``getBoundingClientRect`` of each figure's texts in a real page;
* the chart camera of the app's focused heatmap: the image plotly.js saves with the chart's own
  ``toImageButtonOptions`` (the real camera button, in SVG and PNG).

Asserted everywhere: no two texts overlap, every text is inside its canvas, heatmap cells are square, a
panel's caption sits above its own panel (and below the panel before it), and each slide says what it shows
(title with stage and head, the sentence and settings line).
"""
from __future__ import annotations

import struct
import urllib.parse
from pathlib import Path

import pytest

from browser_utils import ARTIFACTS, chromium_missing, images_folder, wait_idle

_missing = chromium_missing()
if _missing:
    print(f"SKIPPING slide layout tests: {_missing}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

ROOT = Path(__file__).resolve().parent.parent

# Boxes of every drawn text and every heatmap image under ``root`` (an <svg>, or a figure's div).
MEASURE = """(root) => {
    const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const svg = root.tagName.toLowerCase() === 'svg' ? root : root.querySelector('svg.main-svg');
    const texts = Array.from(root.querySelectorAll('text')).filter(t => t.textContent.trim()
            && t.getBoundingClientRect().width > 0 && getComputedStyle(t).visibility !== 'hidden'
            && !t.closest('.hoverlayer, .modebar'))
        .map(t => [...box(t), t.textContent, t.getAttribute('class') || '']);
    const panels = Array.from(root.querySelectorAll('g.subplot')).map(g => {
        const img = g.querySelector('g.hm image');
        return img ? [...box(img), Array.from(g.classList).find(c => c !== 'subplot')] : null;
    }).filter(Boolean);
    return {canvas: box(root.tagName.toLowerCase() === 'svg' ? root : root), texts, panels,
            width: svg ? parseFloat(svg.getAttribute('width')) : null};
}"""


def overlap(a, b, slack: float = 0.5) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > slack and min(a[3], b[3]) - max(a[1], b[1]) > slack


def check_slide(m: dict, shape: tuple[int, int], captions: bool, where: str, flattest: float = 1.0) -> None:
    """No overlapping texts, all inside the canvas, square cells (``flattest`` < 1: cells as tall as wide or down to
    that share of it), captions above their own panels."""
    texts, canvas = m["texts"], m["canvas"]
    assert texts and m["panels"], where
    for i, a in enumerate(texts):
        assert canvas[0] - 1 <= a[0] and a[2] <= canvas[2] + 1 and canvas[1] - 1 <= a[1] and a[3] <= canvas[3] + 1, \
            (where, "outside the canvas", a, canvas)
        for b in texts[i + 1:]:
            assert not overlap(a, b), (where, "texts overlap", a, b)
    rows, cols = shape
    for p in m["panels"]:
        cell_w, cell_h = (p[2] - p[0]) / cols, (p[3] - p[1]) / rows
        if flattest < 1:
            assert flattest * cell_w - 0.3 <= cell_h <= cell_w * 1.02 + 0.3, (where, "cells too flat", p, shape)
            continue
        assert abs(cell_w - cell_h) <= 0.02 * max(cell_w, cell_h) + 0.3, (where, "cells not square", p, shape)
    if captions:
        heads = {t[4].replace("头 ", "head "): t for t in texts if t[4].startswith(("head ", "头 "))}
        order = sorted(m["panels"], key=lambda p: int(p[4][1:].split("y")[0] or 1))  # xy, x2y2, … = head 0, 1, …
        assert len(heads) == len(order), (where, sorted(heads))
        for h, p in enumerate(order):
            cap = heads[f"head {h}"]
            assert p[0] <= (cap[0] + cap[2]) / 2 <= p[2], (where, "caption not over its panel", cap, p)
            assert cap[3] <= p[1] + 0.5, (where, "caption not above its panel", cap, p)
            above = [q for q in order if q[3] <= p[1] and q[0] < cap[2] and cap[0] < q[2]]  # the panel before it
            assert all(q[3] <= cap[1] + 0.5 for q in above), (where, "caption reads as the panel above's", cap, above)


def svg_page(chromium, svg: bytes):
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    page.set_content(f"<html><body style='margin:0'>{svg.decode('utf-8')}</body></html>")
    page.wait_for_timeout(200)  # web fonts: none; system fonts are ready at once
    return page


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def kaleido_server():
    from transformer_core.cli import export

    with export.image_server():
        yield


@pytest.mark.parametrize("argv, shape, captions", [
    # the reported case: every head of masked scores (colour note once, per-head captions above the panels)
    (["--text", "the cat sat on the mat", "--stage", "masked_scores"], (6, 6), True),
    (["--text", "the cat sat on the mat", "--causal", "--head", "3"], (6, 6), False),
    (["--text", "the cat sat on the mat", "--stage", "q", "--head", "0"], (6, 8), False),  # [pos, d_head]
    (["--text", " ".join(f"w{i}" for i in range(64)), "--n-heads", "12", "--d-model", "96", "--causal"], (64, 64), True),
    (["--text", "我们今天学习注意力机制，因为它很有用。", "--lang", "zh"], (10, 10), True),
])
def test_cli_svg_slides(argv, shape, captions, tmp_path, chromium, kaleido_server, request):
    from transformer_core.cli import export

    out = tmp_path / "slide.svg"
    try:
        assert export.main(argv + ["--out", str(out)]) == 0
    finally:
        from transformer_core.text.i18n import set_language

        set_language("en")
    page = svg_page(chromium, out.read_bytes())
    m = page.evaluate(MEASURE, page.query_selector("svg").evaluate_handle("e => e"))
    where = " ".join(argv[-3:])
    check_slide(m, shape, captions, where)
    header = " ".join(t[4] for t in m["texts"] if t[1] < m["panels"][0][1] - 60)
    assert "sentence 0" in header or "句" in header, header  # the sentence-and-settings line
    assert m["width"] == 1280
    print(f"\n{where}: {len(m['texts'])} texts, {len(m['panels'])} panels, cell "
          f"{(m['panels'][0][2] - m['panels'][0][0]) / shape[1]:.1f} px, no overlap")
    if request.node.callspec.id.startswith("argv0"):
        target = images_folder(tmp_path) / "slide_all_heads_masked_scores.png"  # docs/images/ from make_docs_images.py
        page.locator("svg").first.screenshot(path=str(target))
    page.close()


def html_figures(chromium, text: str, name: str) -> tuple[list[dict], object]:
    path = ARTIFACTS / name
    ARTIFACTS.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(path.as_uri())
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot g.hm image').length > 0", timeout=60_000)
    page.wait_for_timeout(300)
    figs = [page.evaluate(MEASURE, d) for d in page.query_selector_all(".js-plotly-plot")]
    for f, d in zip(figs, page.query_selector_all(".js-plotly-plot")):
        f["title"] = d.evaluate("d => (d.querySelector('.gtitle') || {}).textContent || ''")
        f["title_box"] = d.evaluate("d => { const r = d.querySelector('.gtitle').getBoundingClientRect();"
                                    " return [r.left, r.top, r.right, r.bottom]; }")
    return figs, page


def check_html(figs: list[dict], shape: tuple[int, int], where: str) -> None:
    """Each figure a slide: its own title above its own heatmap, inside its own box, below the figure before."""
    for i, f in enumerate(figs):
        check_slide(f, shape, False, f"{where} figure {i}")
        panel, title = f["panels"][0], f["title_box"]
        assert f["canvas"][1] <= title[1] and title[3] <= panel[1], (where, i, "title not above its figure", title)
        if i:
            assert figs[i - 1]["canvas"][3] <= f["canvas"][1] + 0.5, (where, i, "figures overlap")
            assert figs[i - 1]["panels"][0][3] < title[1], (where, i, "title reads as the figure before's caption")


def test_minilm_html_export_titles_each_head_above_its_figure(tmp_path, chromium):
    pytest.importorskip("transformer_core.models.minilm_trace")
    from transformer_core.cli import export
    from transformer_core.models.minilm import PretrainedUnavailable

    try:
        trace = export.run_minilm_trace(["the bank of the river"])
    except (PretrainedUnavailable, export.ExportError) as err:
        pytest.skip(f"MiniLM unavailable: {err}")
    out = export.export(trace, stage="weights", layer=5, fmt="html", out=tmp_path / "bank.html")
    figs, page = html_figures(chromium, out.read_text(encoding="utf-8"), "slide_minilm.html")
    n = trace.lengths[0]
    assert [f["title"] for f in figs] == [f"Attention weights softmax(·) — layer 5, head {h}" for h in range(12)]
    check_html(figs, (n, n), "MiniLM HTML")
    page.close()


def test_app_offline_html_names_the_stage_of_every_figure(chromium):
    from transformer_core.figures import slide
    from transformer_core.models.toy import run_toy
    from transformer_core.nn.config import EncoderConfig

    trace = run_toy(["the cat sat on the mat"], EncoderConfig(d_model=64, n_heads=8), causal=True)
    stages = ("scores", "masked_scores", "weights", "context")
    figs, page = html_figures(chromium, slide.trace_html(trace, stages), "slide_app.html")
    assert len(figs) == 32
    names = {"scores": "Raw scores", "masked_scores": "Masked scores", "weights": "Attention weights",
             "context": "Per-head context"}
    for i, f in enumerate(figs):
        stage, head = stages[i // 8], i % 8
        assert f["title"].startswith(names[stage]) and f["title"].endswith(f"head {head}"), f["title"]
    check_html(figs[:24], (6, 6), "app HTML")
    check_html(figs[24:], (6, 8), "app HTML context")
    assert page.get_by_text("causal + padding mask").first.is_visible()  # the settings under the page title
    page.close()


FOCUS = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .find(d => d.layout && d.layout.meta && d.layout.meta.head !== undefined && d.layout.meta.stage !== 'heads')"""


def camera(page, fmt: str) -> bytes:
    """Click the focused chart's camera button; the bytes it saves."""
    index = page.evaluate(f"() => Array.from(document.querySelectorAll('.js-plotly-plot')).indexOf(({FOCUS})())")
    chart = page.locator(".js-plotly-plot").nth(index)
    chart.hover()
    with page.expect_download(timeout=60_000) as info:
        chart.locator(".modebar-btn").first.click()  # the camera is the modebar's one button (chart_config)
    return Path(info.value.path()).read_bytes()


@pytest.mark.parametrize("n", [12, 40])
def test_chart_camera_saves_the_slide_header_and_square_cells(server, chromium, n, tmp_path):
    words = "The animal didn't cross the street because it was too tired." if n == 12 else \
        " ".join(f"w{i}" for i in range(n))
    query = {"text": words, "causal": 1, "head": 2}
    page = chromium.new_page(viewport={"width": 1280, "height": 720}, accept_downloads=True)
    page.goto(f"{server}/?" + urllib.parse.urlencode(query))
    wait_idle(page)
    size = page.evaluate(f"() => {{ const d = ({FOCUS})(); return [d._fullLayout.width, d._fullLayout.height]; }}")
    options = page.evaluate(f"() => ({FOCUS})()._context.toImageButtonOptions")
    assert options["width"] is None and options["height"] is None and options["scale"] == 2, options
    png = camera(page, "png")
    assert png_size(png) == (2 * size[0], 2 * size[1]), (png_size(png), size)
    page.locator('[data-testid="stSidebar"]').get_by_text("svg", exact=True).click()  # the camera's format
    wait_idle(page)
    svg = camera(page, "svg")
    # measured in a page of its own, with the system's fonts only: the camera's PNG is drawn from this SVG as an
    # image, which cannot use the app's web fonts either (with Streamlit's Source Sans, labels ran into each other)
    page.close()
    page = svg_page(chromium, svg)
    m = page.evaluate(MEASURE, page.query_selector("svg").evaluate_handle("e => e"))
    tokens = n if n != 12 else 12
    # up to 12-13 tokens the screen's figure fits a 720-px first screen, its cells up to 5:4 (fit_height)
    check_slide(m, (tokens, tokens), False, f"camera {n} tokens", flattest=0.8 if n <= 12 else 1.0)
    top = "".join(t[4] for t in m["texts"] if t[3] <= m["panels"][0][1]).replace(" ", "")  # lines join unspaced
    under = "".join(t[4] for t in m["texts"] if t[1] >= m["panels"][0][3]).replace(" ", "")
    assert "head2·Attentionweights" in top, top  # the title above, the sentence and settings under the cells
    assert "causal+paddingmask" in under and "sentence0:“" in under and "colours0–" in under, under
    print(f"\ncamera at 1280×720, {n} tokens: chart {size[0]}×{size[1]} → PNG {png_size(png)}, "
          f"{len(m['texts'])} texts, cell {(m['panels'][0][2] - m['panels'][0][0]) / tokens:.1f} px")
    if n == 12:
        (images_folder(tmp_path) / "slide_camera.png").write_bytes(png)  # what the camera saved
    page.close()
