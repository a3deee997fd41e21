"""The "Attention since 2017" page in headless Chromium at 1280×720, in English and 中文: every tab
opens from its link, and its answer — the main figure and the number or table that goes with it — is drawn inside
the first screen. Screenshots are saved in tmp_path (or $ATTENTION_DOCS_IMAGES) for a person to look at."""
from __future__ import annotations

import urllib.parse

import pytest

from browser_utils import chromium_missing, images_folder, wait_idle

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]
FRESH_SERVER = True  # its own server (tests/conftest.py): it counts the model calls since the server started

WIDTH, HEIGHT = 1280, 720
# section → (the figure kind that answers it, a table or metric that must be in view too)
TABS = {"Positions": ("scores", None), "Shared KV heads": ("groups", "46,080"),
        "KV cache": ("query_row", "stMetric"), "Long inputs": ("mask", "stDataFrame"),
        "Online softmax": ("tiles", "stDataFrame")}


def boxes(page, kind: str) -> list[dict]:
    return page.evaluate("""(kind) => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .filter(d => d.layout && d.layout.meta && d.layout.meta.kind === kind)
        .map(d => { const r = d.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left,
                                                                 right: r.right}; })""", kind)


def first_of(page, what: str) -> dict | None:
    """The top and bottom of the first element of the main area with data-testid ``what`` (``st…``), else of the
    first one whose text holds ``what``."""
    if not what.startswith("st"):
        box = page.locator('[data-testid="stMain"]').get_by_text(what).first.bounding_box()
        return box and {"top": box["y"], "bottom": box["y"] + box["height"]}
    return page.evaluate("""(id) => { const e = document.querySelector(`[data-testid="stMain"] [data-testid="${id}"]`);
        if (!e) return null; const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; }""", what)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_tab_answers_in_the_first_screen(server, chromium, lang, tmp_path):
    folder = images_folder(tmp_path)
    page = chromium.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    for i, (section, (kind, other)) in enumerate(TABS.items()):
        page.goto(f"{server}/modern?{urllib.parse.urlencode({'section': section, 'lang': lang})}")
        wait_idle(page, 240_000)
        page.screenshot(path=str(folder / f"modern_{lang}_{i}.png"))
        drawn = boxes(page, kind)
        assert drawn, f"{section}: no {kind} figure"
        for box in drawn:  # the figure starts in the first screen, inside the page's width
            assert 0 <= box["top"] < HEIGHT - 200 and box["right"] <= WIDTH, (section, box)
        if other:
            where = first_of(page, other)
            assert where and where["top"] < HEIGHT - 60, (section, other, where)
        title = page.locator("h1").first.inner_text()
        assert title == ("Attention since 2017" if lang == "en" else "2017 年以来的注意力")
        if lang == "en":
            assert page.locator('[role="tab"][aria-selected="true"]').first.inner_text().strip() == section
    page.close()


def test_a_kv_cache_step_runs_no_model_and_a_window_step_one(server, chromium, smollm2_or_skip):
    """The KV-cache tab on SmolLM2 generates once (32 cached steps and one check run); moving the step slider is
    served from that, with no forward call. A long-inputs slider step is one batched forward call (the window, and the
    window with its sinks), the unwindowed run kept from the tab's first visit."""
    from browser_utils import model_forwards

    page = chromium.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    page.goto(f"{server}/modern?{urllib.parse.urlencode({'section': 'KV cache', 'model': 'smollm2', 'step': 3})}")
    wait_idle(page, 240_000)
    rows = page.locator('[data-testid="stMetricValue"]').first.inner_text()
    before = model_forwards(chromium, server)
    page.get_by_role("slider").first.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => location.search.includes('step=4')", timeout=60_000)
    wait_idle(page, 120_000)
    assert int(page.locator('[data-testid="stMetricValue"]').first.inner_text()) == int(rows) + 1
    assert model_forwards(chromium, server) == before

    page.goto(f"{server}/modern?{urllib.parse.urlencode({'section': 'Long inputs', 'window': 6, 'sinks': 1})}")
    wait_idle(page, 240_000)
    before = model_forwards(chromium, server)["smollm2"]
    page.get_by_role("slider").first.focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("() => location.search.includes('window=5')", timeout=60_000)
    wait_idle(page, 120_000)
    assert model_forwards(chromium, server)["smollm2"] == before + 1
    page.close()
