"""The SmolLM2 page in headless Chromium at 1280×720, in English and 中文 (issue 32): the first visit draws the
predictions and the head grid; a click on a tile of the grid opens that head, and the open head is drawn inside the
screen beside the grid. Times are printed (first render, click → head drawn). Screenshots go to tmp_path (or
$ATTENTION_DOCS_IMAGES), never into the checkout."""
from __future__ import annotations

import time

import pytest

from browser_utils import chromium_missing, images_folder, wait_idle

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

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
    assert 0 <= opened["top"] < HEIGHT - 150 and opened["right"] <= WIDTH, opened  # drawn in view beside the grid
    assert page.get_by_text("// 3" if lang == "en" else "// 3").first.is_visible()  # the KV group is named
    url = page.url
    assert f"layer={LAYER}" in url and f"head={HEAD}" in url
    with capsys.disabled():
        print(f"\n/llm {lang}: first render {first:.2f} s, tile click → head drawn {clicked:.2f} s")
    page.close()
