"""The SmolLM2 page in headless Chromium at 1280×720, in English and 中文: the first visit draws the
predictions and the head grid; a click on a tile of the grid opens that head (under the grid, as wide as the page), and
the page brings the open head onto the screen. Times are printed (first render, click → head drawn). Screenshots go
to tmp_path (or $ATTENTION_DOCS_IMAGES), never into the checkout."""
from __future__ import annotations

import time

import pytest

from browser_utils import chromium_missing, images_folder, model_forwards, wait_idle

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]
FRESH_SERVER = True  # its own server (tests/conftest.py): it counts the model calls since the server started

WIDTH, HEIGHT = 1280, 720
LAYER, HEAD = 12, 5


@pytest.fixture(scope="module", autouse=True)
def _smollm2(smollm2_or_skip):  # conftest: the model loaded once, or this module skipped with the pip command
    return smollm2_or_skip


def figure(page, stage: str) -> dict | None:
    """Meta and on-screen box of the first drawn chart whose layout.meta.stage is ``stage``."""
    return page.evaluate("""(stage) => {
        const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
            .find(d => d.layout && d.layout.meta && d.layout.meta.stage === stage);
        if (!d) return null;
        const r = d.getBoundingClientRect();
        return {meta: d.layout.meta, top: r.top, bottom: r.bottom, left: r.left, right: r.right}; }""", stage)


def focus(page) -> dict | None:
    """The open head's large figure (the head view's focus: its meta names head and layer)."""
    return page.evaluate("""() => {
        const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
            .find(d => d.layout && d.layout.meta && d.layout.meta.head !== undefined && d.layout.meta.layer !== undefined
                       && d.layout.meta.stage === 'weights');
        if (!d) return null;
        const r = d.getBoundingClientRect();
        return {meta: d.layout.meta, top: r.top, bottom: r.bottom, left: r.left, right: r.right}; }""")


def click_tile(page, layer: int, head: int) -> None:
    x, y = page.evaluate("""([i]) => {
        const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
            .find(d => d.layout && d.layout.meta && d.layout.meta.stage === 'head_grid');
        const p = d.querySelectorAll('.scatterlayer .point')[i];
        d.scrollIntoView({block: 'start'});
        const r = p.getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2]; }""", [layer * 9 + head])
    page.mouse.click(x, y)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_tile_click_opens_the_head_in_view(server, chromium, lang, tmp_path, capsys):
    folder = images_folder(tmp_path)
    page = chromium.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    start = time.perf_counter()
    page.goto(f"{server}/llm?lang={lang}")
    wait_idle(page, 240_000)
    first = time.perf_counter() - start
    page.screenshot(path=str(folder / f"llm_{lang}_first.png"))
    bars = figure(page, "predictions")
    assert bars and 0 <= bars["top"] < HEIGHT, bars  # the next-word bars start in the first screen
    title = page.locator("h1").first.inner_text()
    assert title.startswith("A real language model" if lang == "en" else "真实的语言模型")
    assert figure(page, "head_grid")["meta"]["highlight"] == [0, 0]

    before = model_forwards(chromium, server)
    start = time.perf_counter()
    click_tile(page, LAYER, HEAD)
    page.wait_for_function("""([layer, head]) => {
        const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
            .find(d => d.layout && d.layout.meta && d.layout.meta.stage === 'head_grid');
        return d && d.layout.meta.highlight && d.layout.meta.highlight[0] === layer
               && d.layout.meta.highlight[1] === head; }""", arg=[LAYER, HEAD], timeout=120_000)
    # the grid is sent first, the open head after its layer has run (same fragment run): wait for both
    page.wait_for_function("""([layer, head]) => Array.from(document.querySelectorAll('.js-plotly-plot')).some(
        d => d.layout && d.layout.meta && d.layout.meta.stage === 'weights' && d.layout.meta.head === head
             && d.layout.meta.layer === layer)""", arg=[LAYER, HEAD], timeout=120_000)
    wait_idle(page, 120_000)
    clicked = time.perf_counter() - start
    page.screenshot(path=str(folder / f"llm_{lang}_open_head.png"))
    opened = focus(page)
    assert opened and opened["meta"]["head"] == HEAD and opened["meta"]["layer"] == LAYER, opened
    assert 0 <= opened["top"] < HEIGHT - 150 and opened["right"] <= WIDTH, opened  # drawn in view (brought up under the grid)
    assert page.get_by_text("// 3" if lang == "en" else "// 3").first.is_visible()  # the KV group is named
    url = page.url
    assert f"layer={LAYER}" in url and f"head={HEAD}" in url
    # served from the prompt's one run: the open layer is its block recomputed from the kept residual stream
    assert model_forwards(chromium, server) == before, (before, model_forwards(chromium, server))
    with capsys.disabled():
        print(f"\n/llm {lang}: first render {first:.2f} s, tile click → head drawn {clicked:.2f} s")
    page.close()


# [left, top, right, bottom, text] of every drawn text of each chart that spills out of its own SVG (a caption cut at
# the figure's edge: "…fixed 0–1 scale t")
SPILLED = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(d => {
    const s = d.querySelector('.main-svg').getBoundingClientRect();
    return Array.from(d.querySelectorAll('text')).filter(t => t.textContent.trim() && !t.closest('.hoverlayer, .modebar'))
        .map(t => [t.getBoundingClientRect(), t.textContent])
        .filter(([r, x]) => r.width > 0 && (r.right > s.right + 0.5 || r.left < s.left - 0.5))
        .map(([r, x]) => [d.layout.meta && d.layout.meta.stage, x]); }).flat()"""
# the open head's heatmap (its drawn image) and the smallest font of its tick labels
FOCUS_IMAGE = """() => { const d = Array.from(document.querySelectorAll('.js-plotly-plot')).find(d => d.layout && d.layout.meta
        && d.layout.meta.head !== undefined && d.layout.meta.stage === 'weights');
    const r = d.querySelector('g.hm image').getBoundingClientRect();
    const fonts = Array.from(d.querySelectorAll('.xtick text, .ytick text')).map(t => parseFloat(getComputedStyle(t).fontSize));
    return {top: r.top, bottom: r.bottom, width: r.width, height: r.height, font: Math.min(...fonts)}; }"""
# the stage buttons and the Layer box beside them: [right of the last stage button, right of its row's column,
# left of the Layer box]
STAGE_ROW = """(stage) => { const label = Array.from(document.querySelectorAll('[data-testid="stWidgetLabel"]'))
        .find(e => e.innerText.trim() === stage);
    const control = label.closest('[data-testid="stElementContainer"]');
    const buttons = Array.from(control.querySelectorAll('button')).map(b => b.getBoundingClientRect().right);
    const column = control.closest('[data-testid="stColumn"]').getBoundingClientRect();
    const row = control.closest('[data-testid="stHorizontalBlock"]');
    const layer = row.querySelectorAll('[data-testid="stColumn"]')[1].getBoundingClientRect();
    return [Math.max(...buttons), column.right, layer.left, buttons.length]; }"""


@pytest.mark.parametrize("lang, n_tokens", [("en", 14), ("zh", 15)])
def test_open_head_readable_and_in_view_at_1280x720(server, chromium, lang, n_tokens, tmp_path, capsys):
    """A classroom projector (1280×720), the default prompt of each language (14 and 35 tokens). Beside the grid, the
    open head was ~105 px square with its key labels over each other, the stage row ran under the Layer box
    ("contex", "上下"), the tile titles ran together ("head 0 · KV0head 1 · KV0") and the caption was cut at the
    figure's edge. Now: no two texts of any chart overlap, no text leaves its chart, tick labels are ≥ 10 px, the
    heatmap is ≥ 200 px, every stage button is whole, and a tile click brings the opened head into view."""
    from layout_probe import CHART_TEXTS, overlapping

    page = chromium.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    page.goto(f"{server}/llm?lang={lang}")
    wait_idle(page, 240_000)
    assert figure(page, "weights")["meta"]["layer"] == 0
    n = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot')).find(d => d.layout.meta"
                      " && d.layout.meta.stage === 'weights')._fullData[0].z.length")
    assert n == n_tokens
    charts = page.evaluate(CHART_TEXTS)
    found = {c["meta"].get("stage"): overlapping(c["texts"])[:4] for c in charts if overlapping(c["texts"])}
    spilled = page.evaluate(SPILLED)
    heat = page.evaluate(FOCUS_IMAGE)
    last, column, layer_box, n_stages = page.evaluate(STAGE_ROW, "Stage" if lang == "en" else "阶段")
    with capsys.disabled():
        print(f"\n/llm {lang}, {n} tokens: {len(charts)} charts, overlapping {found}, spilled {spilled}, heatmap "
              f"{heat['width']:.0f} px, smallest tick {heat['font']} px, stage buttons end at {last:.0f} "
              f"(column {column:.0f}, Layer box {layer_box:.0f})")
    assert not found and not spilled
    assert heat["width"] >= 200 and heat["height"] >= 200 and heat["font"] >= 10, heat
    assert n_stages >= 7 and last <= column + 0.5 and last <= layer_box, (last, column, layer_box)

    click_tile(page, LAYER, HEAD)
    page.wait_for_function("""([layer, head]) => Array.from(document.querySelectorAll('.js-plotly-plot')).some(
        d => d.layout && d.layout.meta && d.layout.meta.stage === 'weights' && d.layout.meta.head === head
             && d.layout.meta.layer === layer)""", arg=[LAYER, HEAD], timeout=120_000)
    wait_idle(page, 120_000)
    page.wait_for_timeout(800)
    page.screenshot(path=str(tmp_path / f"llm_{lang}_{n}_tile_click.png"))
    heat = page.evaluate(FOCUS_IMAGE)
    header = page.evaluate("() => document.querySelector('[data-testid=\"stHeader\"]').getBoundingClientRect().bottom")
    stage_label = page.evaluate("""(stage) => Array.from(document.querySelectorAll('[data-testid="stWidgetLabel"]'))
        .find(e => e.innerText.trim() === stage).getBoundingClientRect().top""", "Stage" if lang == "en" else "阶段")
    page.close()
    with capsys.disabled():
        print(f"after a tile click on L{LAYER}H{HEAD}: heatmap at {heat['top']:.0f}–{heat['bottom']:.0f} px, Stage "
              f"label at {stage_label:.0f} (viewport 0–{HEIGHT}, header to {header:.0f})")
    assert header <= heat["top"] and heat["top"] + min(heat["height"], 300) <= HEIGHT, heat  # its top 300 px in view
    if heat["bottom"] - heat["top"] < HEIGHT - 250:  # room for it: the Stage / Layer / Head row too (was at -8 px)
        assert header <= stage_label, stage_label
        assert heat["bottom"] <= HEIGHT, heat


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_what_the_heads_write_at_1280x720(server, chromium, lang, tmp_path):
    """The attribution grid and its answer side by side in one screen, the logit lens and the routes opened from their
    boxes, no text of any figure outside its chart; a click on a route's edge opens that edge's head with its cell;
    screenshots for a person to look at."""
    folder = images_folder(tmp_path)
    page = chromium.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    page.goto(f"{server}/llm?lang={lang}&lens=1&routes=1")
    wait_idle(page, 240_000)
    for view in ("dla", "logit_lens", "routes"):
        box = page.evaluate("""(v) => { const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
            .find(d => d.layout && d.layout.meta && d.layout.meta.view === v);
            d.scrollIntoView({block: 'start'}); window.scrollBy(0, -60);
            const r = d.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, right: r.right}; }""", view)
        page.wait_for_timeout(300)
        page.screenshot(path=str(folder / f"llm_{lang}_{view}.png"))
        assert box["right"] <= WIDTH and box["bottom"] - box["top"] <= HEIGHT, (view, box)
    spilled = [s for s in page.evaluate(SPILLED) if s and s[0] is None]
    assert not spilled, spilled[:5]
    # the strongest edge from another token: its diamond opens its head, the edge's cell explained, in view
    x, y, data = page.evaluate("""() => { const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout && d.layout.meta && d.layout.meta.view === 'routes');
        const last = d.data.length - 1, cd = d.data[last].customdata;
        let best = -1; cd.forEach((c, i) => { if (c[2] !== c[3] && (best < 0 || c[4] > cd[best][4])) best = i; });
        d.scrollIntoView({block: 'center'});
        const r = d.querySelectorAll('.scatterlayer .trace')[last].querySelectorAll('.point')[best]
            .getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2, cd[best]]; }""")
    page.mouse.click(x, y)
    page.wait_for_function("""([layer, head]) => { const u = new URLSearchParams(location.search);
        return u.get('layer') === String(layer) && u.get('head') === String(head); }""", arg=data[:2], timeout=120_000)
    wait_idle(page, 120_000)
    opened = focus(page)
    assert opened and (opened["meta"]["layer"], opened["meta"]["head"]) == tuple(data[:2]), (opened, data)
    assert opened["top"] < HEIGHT and opened["bottom"] > 0, opened  # brought into view
    query = page.evaluate("() => Object.fromEntries(new URLSearchParams(location.search))")
    assert (int(query["q"]), int(query["k"])) == (data[3], data[2])  # the edge's cell: its query reads its key
    page.screenshot(path=str(folder / f"llm_{lang}_route_clicked.png"))
    page.close()
