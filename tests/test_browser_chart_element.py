"""Our Plotly element (ui/shell/chart.py) in headless Chromium, in English and Chinese: it draws in the light
DOM with plotly.js's cartesian bundle (no st.plotly_chart), a hover shows the cell's text, a click on a tile centre
opens that head, the modebar's camera saves a PNG, and the camera's tooltip is in the page's language.

Downloads go to Playwright's temporary folder only (the checkout stays clean)."""
from __future__ import annotations

import pytest

from browser_utils import chromium_missing, wait_idle

_missing = chromium_missing()
if _missing:
    print(f"SKIPPING chart element browser tests: {_missing}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

FOCUS = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .find(d => d.layout && d.layout.meta && d.layout.meta.stage === 'weights')"""
TILES = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .find(d => d.layout && d.layout.meta && d.layout.meta.stage === 'heads')"""
CAMERA = {"en": "Download plot as a PNG", "zh": "下载图表为PNG格式"}


@pytest.fixture(scope="module", params=["en", "zh"])
def explorer(request, server, chromium):
    """The explorer, one page per language, kept for the module's tests in order."""
    page = chromium.new_page(viewport={"width": 1280, "height": 720}, accept_downloads=True)
    page.goto(f"{server}/?lang={request.param}")
    wait_idle(page)
    yield request.param, page
    page.close()


def test_the_element_draws_in_the_light_dom_with_the_cartesian_bundle(explorer):
    lang, page = explorer
    drawn = page.evaluate("""() => ({
        charts: document.querySelectorAll('.attention-chart.js-plotly-plot').length,
        streamlit: document.querySelectorAll('[data-testid="stPlotlyChart"]').length,
        bundles: Array.from(document.scripts).map(s => s.src).filter(s => s.includes('/app/static/plotly/')),
        heatmap: !!document.querySelector('.attention-chart g.hm image'),
        colorbar: !!document.querySelector('.attention-chart .colorbar'),
        locale: (({FOCUS})()._context || {}).locale })""".replace("{FOCUS}", FOCUS))
    assert drawn["charts"] >= 2 and drawn["streamlit"] == 0
    assert drawn["heatmap"] and drawn["colorbar"]
    names = sorted(s.rsplit("/", 1)[1] for s in drawn["bundles"])
    assert names == (["plotly-cartesian-4.1.1.min.js", "plotly-locale-zh-cn-4.1.1.js"] if lang == "zh"
                     else ["plotly-cartesian-4.1.1.min.js"])  # each once, however many charts
    assert drawn["locale"] == "zh-CN" if lang == "zh" else drawn["locale"].startswith("en")  # plotly's en-US


def test_a_hover_shows_the_cells_text(explorer):
    lang, page = explorer
    box = page.evaluate(f"""() => {{ const r = ({FOCUS})().querySelector('g.hm image').getBoundingClientRect();
        return [r.left, r.top, r.width, r.height]; }}""")
    page.mouse.move(box[0] + box[2] * 0.1, box[1] + box[3] * 0.1)  # the first cell: query 0, key 0
    page.wait_for_selector(".attention-chart .hoverlayer .hovertext", timeout=10_000)
    text = page.text_content(".attention-chart .hoverlayer .hovertext")
    assert "0: The" in text or "0: 小猫" in text, text  # the cell's row and column names (中文 opens on Chinese)


def test_the_modebar_camera_saves_a_png_with_its_tooltip_in_the_pages_language(explorer):
    lang, page = explorer
    chart = page.locator(".attention-chart.js-plotly-plot").first
    chart.hover()
    button = chart.locator(".modebar-btn").first
    assert button.get_attribute("data-title") == CAMERA[lang]
    with page.expect_download(timeout=60_000) as info:
        button.click()
    download = info.value
    assert download.suggested_filename.endswith(".png")
    with open(download.path(), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_st_plotly_charts_modebar_and_its_fullscreen_button(explorer):
    """As st.plotly_chart: no lasso/box select for a points-only chart, no "send to cloud", and a Fullscreen
    button (hidden by our pages' camera-only modebar, as in st.plotly_chart) that covers the window until Escape."""
    lang, page = explorer
    seen = page.evaluate(f"""async () => {{
        const d = ({FOCUS})(), wait = () => new Promise(r => setTimeout(r, 500));
        const size = () => [d.classList.contains('attention-chart-full'), d._fullLayout.width, d._fullLayout.height,
                            d._context.modeBarButtonsToAdd.map(b => b.title).join()];
        const out = {{remove: d._context.modeBarButtonsToRemove, before: size()}};
        d.__attention.click(); await wait(); out.full = size();
        document.dispatchEvent(new KeyboardEvent('keydown', {{key: 'Escape'}})); await wait(); out.after = size();
        return out; }}""")
    assert sorted(seen["remove"]) == ["lasso2d", "select2d", "sendChartToCloud"]
    assert seen["before"] == seen["after"] and seen["before"][0] is False and seen["before"][3] == "Fullscreen"
    full, width, height, title = seen["full"]
    assert full and title == "Close fullscreen" and width == 1280 - 64 and height == 720 - 64


def test_a_click_on_a_tile_centre_opens_that_head(explorer):
    lang, page = explorer
    x, y = page.evaluate(f"""() => {{ const p = ({TILES})().querySelectorAll('.scatterlayer .point')[5];
        p.scrollIntoView({{block: 'center'}});
        const r = p.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }}""")
    page.mouse.click(x, y)
    page.wait_for_function(f"() => ({FOCUS})() && ({FOCUS})().layout.meta.head === 5", timeout=60_000)
    wait_idle(page)
    assert "head=5" in page.url
