"""The explorer with shared key/value heads and a sliding window, and the masks lab's sliding-window tab, in headless
Chromium at 1280×720 in English and 中文: the tiles name each head's key/value head, the
focused head's weights are zero outside the window and its sink, the lab draws the w = 3, s = 1 mask. Screenshots go
to tmp_path (or $ATTENTION_DOCS_IMAGES) for a person to look at."""
from __future__ import annotations

import urllib.parse

import numpy as np
import pytest

from browser_utils import chromium_missing, images_folder, wait_idle
from test_toy_gqa import WINDOW3_SINK1

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

WIDTH, HEIGHT = 1280, 720
TEXT = {"en": "one two three four five six\nsix five four three two one",
        "zh": "我们 今天 学习 注意力 机制 吧\n猫 坐 在 垫子 上 了"}


def layouts(page) -> list[dict]:
    return page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(d => ({
        meta: d.layout && d.layout.meta, titles: ((d.layout && d.layout.annotations) || []).map(a => a.text),
        z: Array.from((d._fullData[0] && d._fullData[0].z) || [], row => Array.from(row, v => Number.isFinite(v) ? v : null)),
        top: d.getBoundingClientRect().top}))""")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explorer_and_masks_lab(server, chromium, lang, tmp_path):
    folder = images_folder(tmp_path)
    page = chromium.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    query = {"lang": lang, "text": TEXT[lang], "n_kv_heads": "1", "window": "3", "sinks": "1", "stage": "weights"}
    page.goto(f"{server}/?{urllib.parse.urlencode(query)}")
    wait_idle(page, 240_000)
    page.screenshot(path=str(folder / f"explorer_kv_window_{lang}.png"))
    caption = "46,080"  # SmolLM2's bytes per token, beside the toy's
    assert page.locator('[data-testid="stMain"]').get_by_text(caption).first.is_visible()
    tiles = next(f for f in layouts(page) if f["meta"] and f["meta"].get("stage") == "heads")
    word = "head" if lang == "en" else "头"
    assert tiles["titles"] == [f"{word} {h} · KV 0" for h in range(8)]
    page.mouse.move(800, 400)
    page.mouse.wheel(0, 560)
    page.wait_for_timeout(500)
    page.screenshot(path=str(folder / f"explorer_kv_window_{lang}_figures.png"))
    focus = next(f for f in layouts(page) if f["meta"] and f["meta"].get("stage") == "weights")
    weights = np.array([[np.nan if v is None else v for v in row] for row in focus["z"]], dtype=float)
    assert np.isnan(weights[~WINDOW3_SINK1]).all() and not np.isnan(weights[WINDOW3_SINK1]).any()

    query = {"lang": lang, "text": TEXT[lang], "section": "Sliding window", "window": "3", "sinks": "1"}
    page.goto(f"{server}/masks_lab?{urllib.parse.urlencode(query)}")
    wait_idle(page, 240_000)
    page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout && d.layout.meta && d.layout.meta.kind === 'mask').scrollIntoView({block: 'center'})""")
    page.wait_for_timeout(500)
    page.screenshot(path=str(folder / f"masks_lab_window_{lang}.png"))
    mask = next(f for f in layouts(page) if f["meta"] and f["meta"].get("kind") == "mask")
    np.testing.assert_array_equal(np.array(mask["z"], dtype=float), WINDOW3_SINK1.astype(float))
    assert 0 <= mask["top"] < HEIGHT
    page.close()
