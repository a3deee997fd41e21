"""The logit lens drawn by plotly.js in Chromium at the width it has on /llm at 1280×720: every row is at least 16 px
tall, so a cell's top token (10 px) reads, however long the prompt's tokens are (SmolLM2's 31 rows were 16 px at the
default prompt and 15 at a prompt of long words, whose tilted position labels took the rows' room), in English and
中文, the whole figure within the 720-px screen. The figure alone, no app: a standalone page with our pinned plotly.js bundle."""
from __future__ import annotations

import numpy as np
import pytest

from browser_utils import chromium_missing

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

PAGE_WIDTH = 786  # the lens's figure on /llm at 1280×720 (measured)
LONG = ["International", "ization", "␣considerations", "␣notwithstanding", ",", "␣the", "␣extraordinarily",
        "␣comprehensive", "␣documentation", "␣characterizes", "␣un", "character", "istically", "␣straightforward",
        "␣implementations", "␣thereof", "␣and", "␣所有的词元都在这里", "␣of", "␣Mary"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_logit_lens_rows_are_readable(chromium, tmp_path, lang):
    from transformer_core.figures.writes import lens_figure
    from transformer_core.text.i18n import use_language
    from ui.shell.chart import BUNDLE, STATIC

    if not (STATIC / BUNDLE).exists():
        pytest.skip("plotly.js is not fetched (python scripts/fetch_plotly.py)")
    rows, n = 31, len(LONG)  # SmolLM2: the embeddings and 30 layers; the lens's 20 last positions
    prob = np.random.default_rng(0).random((rows, n))
    with use_language(lang):
        fig = lens_figure(prob, [["␣the"] * n] * rows, LONG, target="␣Mary", first=3)
    fig.update_layout(width=PAGE_WIDTH)
    page_file = tmp_path / "lens.html"
    page_file.write_text(fig.to_html(include_plotlyjs=(STATIC / BUNDLE).as_uri(), full_html=True), encoding="utf-8")
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(page_file.as_uri())
    page.wait_for_selector(".js-plotly-plot g.hm image")
    found = page.evaluate("""() => { const d = document.querySelector('.js-plotly-plot');
        const r = d.querySelector('g.hm image').getBoundingClientRect();
        return {plot: r.height, figure: d.getBoundingClientRect().height}; }""")
    page.screenshot(path=str(tmp_path / f"lens_{lang}.png"), full_page=True)
    page.close()
    print(f"\n{lang}: plot {found['plot']:.0f} px for {rows} rows ({found['plot'] / rows:.1f} px a row), "
          f"figure {found['figure']:.0f} px")
    assert found["plot"] / rows >= 16, found
    assert found["figure"] <= 720, found  # and the whole figure in one screen (test_llm_browser checks it on /llm)
