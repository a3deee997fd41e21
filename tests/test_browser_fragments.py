"""Partial reruns (``ui/shell/fragments.py``), in headless Chromium: a click inside a fragment reruns only it.

What the server sends is read from the websocket (Playwright sees the frames decompressed): a full run sends
the sidebar again (its "Chart camera button saves" label), a fragment run only the fragment's own
elements. The rest of the page must stay as it was (its text compared before and after), the fragment must
show the new view, and a change that concerns the whole page (a new sentence, the MiniLM norms stage that
the overview draws) must still rerun everything.
"""
from __future__ import annotations

import json
import urllib.parse

import pytest

from browser_utils import browser, chromium_missing, streamlit_server, wait_idle

_missing = chromium_missing()
if _missing:
    print(f"SKIPPING fragment browser tests: {_missing}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

TWELVE = "The animal didn't cross the street because it was too tired."
SIDEBAR = b"Chart camera button saves"  # a sidebar label: sent on every full run, never by a fragment
FOCUS = """() => { const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
    .find(d => d.layout && d.layout.meta && d.layout.meta.head !== undefined && d.layout.meta.stage !== 'heads');
    return d ? [d.layout.meta.stage, d.layout.meta.head, d.layout.meta.layer] : null; }"""
OUTSIDE = """(sel) => Array.from(document.querySelectorAll(sel)).map(e => e.innerText)"""


@pytest.fixture(scope="module")
def app():
    with streamlit_server() as url, browser() as chromium:
        yield url, chromium


def open_page(app, path: str, **query):
    url, chromium = app
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    frames: list[bytes] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda p: frames.append(
        p if isinstance(p, bytes) else p.encode())))
    page.goto(f"{url}{path}?{urllib.parse.urlencode(query)}")
    wait_idle(page)
    return page, frames


def sent_after(page, frames: list, action, until: str) -> bytes:
    """Everything the server sent for ``action(page)``, once ``until`` (JS) holds and the page is idle again."""
    frames.clear()
    action(page)
    page.wait_for_function(until, timeout=60_000)
    wait_idle(page)
    page.wait_for_timeout(500)  # a rerun of the whole page would have started by now
    wait_idle(page)
    return b"".join(frames)


def focus_is(*expected) -> str:
    """JS: the focused head's (stage, head[, layer]) is ``expected``."""
    return f"() => JSON.stringify(({FOCUS})().slice(0, {len(expected)})) === '{json.dumps(list(expected), separators=(',', ':'))}'"


def pick(label: str, option: str, root: str = "stMain"):
    def act(page):
        box = page.get_by_test_id(root).get_by_test_id("stSelectbox").filter(
            has=page.get_by_text(label, exact=True)).first.get_by_role("combobox")
        choose(page, box, option)
    return act


def choose(page, box, option: str) -> None:
    """Open a selectbox's list and click ``option``. A click or a key does not always open the list at once, and
    an open list was once redrawn away under a loaded full suite (the option detached for 30 s): try again."""
    for attempt in range(6):
        (box.click if attempt % 2 else lambda: box.press("ArrowDown"))()
        try:
            page.get_by_role("option", name=option, exact=True).click(timeout=2000 if attempt < 5 else 10_000)
            return
        except Exception:
            page.keyboard.press("Escape")
    raise AssertionError(f"could not choose {option!r}")


def type_text(text: str):
    def act(page):
        box = page.get_by_role("textbox", name="Sentences (one per line)", exact=True)
        box.fill(text)
        box.press("Control+Enter")
    return act


def click_tab(name: str):
    return lambda page: page.get_by_role("tab", name=name, exact=True).click()


def test_explorer_explain_tab_reruns_only_the_steps(app):
    page, frames = open_page(app, "/", text=TWELVE)
    outside = "[data-testid='stSidebarUserContent'], h1, [data-testid='stExpander']"
    before = page.evaluate(OUTSIDE, outside)
    # the explain panel's steps are a fragment: a tab reruns neither the page nor the head view
    sent = sent_after(page, frames, click_tab("3 · Softmax"),
                      "() => document.body.innerText.includes('Sum of exp =')")
    assert SIDEBAR not in sent and b"head 0" not in sent and b"exp(score" in sent
    assert page.evaluate(OUTSIDE, outside) == before
    # a new sentence changes the whole page: a full run
    sent = sent_after(page, frames, type_text("Kappa lambda mu nu."),
                      "() => document.body.innerText.includes('Kappa')")
    assert SIDEBAR in sent
    assert page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout.meta && d.layout.meta.head === 0)._fullLayout.xaxis.ticktext.join(' ')""") \
        == "0: Kappa 1: lambda 2: mu 3: nu 4: ."
    page.close()


def test_minilm_layer_reruns_the_head_view_and_norms_rerun_the_page(app):
    page, frames = open_page(app, "/minilm", text=TWELVE)
    overview = """() => JSON.stringify(Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout.meta && d.layout.meta.stage === 'overview').data[0].z)"""
    tiles_before, stats_before = page.evaluate(overview), page.evaluate(OUTSIDE, "[data-testid='stDataFrame']")
    sent = sent_after(page, frames, pick("Layer", "3"), focus_is("weights", 0, 3))
    assert SIDEBAR not in sent and b"Per-head statistics" not in sent
    assert page.evaluate(overview) == tiles_before
    assert page.evaluate(OUTSIDE, "[data-testid='stDataFrame']")[:1] == stats_before[:1]  # per-head statistics
    # the overview draws the norms stage: choosing it inside the fragment reruns the whole page
    frames.clear()
    page.get_by_test_id("stElementContainer").filter(has=page.get_by_text("Stage", exact=True)).get_by_role(
        "radio", name="norms", exact=True).click()
    page.wait_for_function("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout && d.layout.meta && d.layout.meta.stage === 'overview')?.layout.meta.of === 'norms'""",
                           timeout=60_000)  # (the overview is redrawn in the part: briefly absent)
    wait_idle(page)
    assert SIDEBAR in b"".join(frames)
    assert page.evaluate(FOCUS) == ["norms", 0, 3]
    page.close()


def test_causal_head_reruns_only_the_head_view(app):
    page, frames = open_page(app, "/causal")
    sent = sent_after(page, frames, pick("Head", "2"), focus_is("weights", 2))
    assert b"Mask the future" not in sent and SIDEBAR not in sent and b"Head scores" not in sent
    # the mask toggle and the checkpoint rerun the part below the sequence (every figure), not the page's intro,
    # sequence controls or sidebar
    outside = "h1, [data-testid='stTextInput'], [data-testid='stSidebarUserContent']"
    before = page.evaluate(OUTSIDE, outside)
    sent = sent_after(page, frames, lambda p: p.get_by_test_id("stMain").get_by_text(
        "Mask the future (as trained)", exact=True).click(), "() => document.body.innerText.includes('Causal mask off')")
    assert b"Mask the future" in sent and b"Head scores" in sent
    assert SIDEBAR not in sent and b"New random sequence" not in sent
    assert page.evaluate(OUTSIDE, outside) == before
    assert "causal_mask=0" in page.url
    sent = sent_after(page, frames, lambda p: p.get_by_test_id("stMain").get_by_role("slider").first.press("ArrowLeft"),
                      "() => location.search.includes('checkpoint=3')")
    assert SIDEBAR not in sent and b"New random sequence" not in sent and b"Head scores" in sent
    page.close()


def test_masks_lab_tab_reruns_only_the_sections(app):
    page, frames = open_page(app, "/masks_lab", text=TWELVE)
    outside = "h1, [data-testid='stSidebarUserContent']"
    before = page.evaluate(OUTSIDE, outside)
    sent = sent_after(page, frames, click_tab("Two conventions"),
                      "() => document.body.innerText.includes('two conventions')")
    assert SIDEBAR not in sent and b"two conventions" in sent
    assert page.evaluate(OUTSIDE, outside) == before
    assert "section=Two+conventions" in page.url or "section=Two%20conventions" in page.url
    page.close()



def click_tile(index: int):
    """Click the centre of overview tile ``index`` (its transparent marker; layer-major: layer = index // 12)."""
    def act(page):
        from browser_utils import click_overview_tile

        click_overview_tile(page, index)
    return act


def test_minilm_tile_reruns_the_overview_and_head_view_only(app):
    page, frames = open_page(app, "/minilm", text=TWELVE)
    stats = "[data-testid='stDataFrame']"
    page.wait_for_selector(stats, timeout=120_000)  # under load the table was not drawn yet, so nothing compared
    stats_before = page.evaluate(OUTSIDE, stats)
    assert stats_before, "the per-head statistics table is drawn"
    sent = sent_after(page, frames, click_tile(2 * 12 + 5), focus_is("weights", 5, 2))
    assert SIDEBAR not in sent and b"Per-head statistics" not in sent
    assert page.evaluate(OUTSIDE, stats)[:1] == stats_before[:1]
    # clicks that ablate: the ablation section below reads the ablated heads, so the whole page reruns
    page.get_by_test_id("stCheckbox").filter(has_text="Click tiles to ablate heads").locator("label").click()
    # the toggle's run has drawn its note (a tile clicked before that would open a head, not ablate it)
    page.wait_for_function("() => document.body.innerText.includes('Ablated: ')", timeout=60_000)
    wait_idle(page)
    sent = sent_after(page, frames, click_tile(3 * 12 + 7),
                      "() => document.body.innerText.includes('L3H7')")
    assert SIDEBAR in sent
    assert page.evaluate(FOCUS) == ["weights", 5, 2]  # the open head stays
    page.close()


HEADS_TITLES = """() => { const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
    .find(d => d.layout && d.layout.meta && d.layout.meta.stage === 'heads');
    return (d.layout.annotations || []).map(a => a.text).join(' '); }"""


def test_a_part_rerun_keeps_the_page_language(app):
    """A click inside a fragment reruns it without app.py, which sets the package's language: the figures drawn
    by transformer_core (the tiled heads' titles, axis titles) must stay Chinese on a Chinese page."""
    page, frames = open_page(app, "/minilm", text=TWELVE, lang="zh")
    assert "头 0" in page.evaluate(HEADS_TITLES)
    sent_after(page, frames, click_tile(2 * 12 + 5), focus_is("weights", 5, 2))
    titles = page.evaluate(HEADS_TITLES)
    assert "头 0" in titles and "head 0" not in titles, titles
    page.close()


def test_the_same_tile_clicked_again_opens_it_again(app):
    """Plotly deselects a selected marker clicked a second time (no point in the event): the click still opens the
    tile, also after the head was changed with the picker in between."""
    page, frames = open_page(app, "/minilm", text=TWELVE)
    sent_after(page, frames, click_tile(3 * 12 + 7), focus_is("weights", 7, 3))
    sent_after(page, frames, pick("Head", "2"), focus_is("weights", 2, 3))
    sent_after(page, frames, click_tile(3 * 12 + 7), focus_is("weights", 7, 3))
    page.close()


def test_pipeline_tab_reruns_only_the_steps(app):
    page, frames = open_page(app, "/pipeline", text=TWELVE)
    outside = "h1, [data-testid='stAlert'], [data-testid='stExpander'], [data-testid='stSidebarUserContent']"
    before = page.evaluate(OUTSIDE, outside)
    # the six steps are a part: a tab reruns neither the page's intro nor its parameter count
    sent = sent_after(page, frames, click_tab("Split heads"),
                      "() => document.body.innerText.includes('Split into 8 heads')")
    assert SIDEBAR not in sent and b"parameters" not in sent and b"Split into 8 heads" in sent
    assert page.evaluate(OUTSIDE, outside) == before
    assert "step=Split+heads" in page.url or "step=Split%20heads" in page.url
    # a new sentence changes the whole page: a full run, and the open tab stays open
    sent = sent_after(page, frames, type_text("Kappa lambda mu nu."),
                      "() => document.body.innerText.includes('5 tokens')")
    assert SIDEBAR in sent and "Split into 8 heads" in page.inner_text("body")
    page.close()


def test_causal_tiles_ablate_in_click_mode(app):
    """The causal page's overview (outside the head view's part) opens heads, or with the toggle on ablates them."""
    page, frames = open_page(app, "/causal")
    sent_after(page, frames, click_tile(0 * 4 + 2), focus_is("weights", 2, 0))  # L0H2 opens
    page.get_by_test_id("stCheckbox").filter(has_text="Click tiles to ablate heads").locator("label").click()
    # the toggle's run has drawn its note (a tile clicked before that would open a head, not ablate it)
    page.wait_for_function("() => document.body.innerText.includes('Ablated: ')", timeout=60_000)
    wait_idle(page)
    sent_after(page, frames, click_tile(0 * 4 + 0), "() => document.body.innerText.includes('Ablated: L0H0, L1H0')")
    meta = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(d => d.layout && d.layout.meta && d.layout.meta.stage === 'overview').layout.meta.ablated"""
    assert page.evaluate(meta) == [[0, 0], [1, 0], [1, 1], [1, 2], [1, 3]]
    assert page.evaluate(FOCUS) == ["weights", 2, 0]  # the open head stays
    page.close()
