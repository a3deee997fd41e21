"""Uploads through the real uploader in headless Chromium: files whose widths disagree or
whose numbers are not finite are refused with one line, tokens with control characters arrive as control
pictures, a trace of exactly the upload limit (32,000,000 bytes) opens and one byte more is refused by the
browser with the same number."""
from __future__ import annotations

import json

import pytest

from browser_utils import chromium_missing, wait_idle
from test_upload_schema_relations import tiny
from ui.explorer.traces import UPLOAD_BYTES

_missing = chromium_missing()
if _missing:
    print(f"SKIPPING browser upload tests: {_missing}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]
UPLOADER = '[data-testid="stFileUploader"] input[type="file"]'


def send(server, chromium, path):
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(server + "/")
    wait_idle(page)
    page.get_by_text("Tokens, downloads and reopening a saved trace").click()
    page.locator(UPLOADER).set_input_files(str(path))
    return page


def refusal(page) -> str:
    page.wait_for_selector('[data-testid="stAlert"]:has-text("cannot be shown")', timeout=120_000)
    wait_idle(page)
    assert not page.locator('[data-testid="stException"]').count()
    notes = page.locator('[data-testid="stAlert"] [data-testid="stMarkdownContainer"]').all_inner_texts()
    return next(t for t in notes if "cannot be shown" in t)


@pytest.mark.parametrize("name, change, expected", [
    ("widths", lambda d: d["stages"]["layers.0.attention.q"].update(shape=[1, 1, 2, 3], data=[[[[0.5] * 3] * 2]]),
     "That file cannot be shown: stage 'layers.0.attention.k' has shape [1, 1, 2, 2] and 'layers.0.attention.q' "
     "has [1, 1, 2, 3]: queries and keys must share d_head (the last dimension)"),
    ("nan", lambda d: d["stages"]["layers.0.attention.scores"]["data"][0][0][1].__setitem__(0, float("nan")),
     "That file cannot be shown: stage 'layers.0.attention.scores' holds NaN at [0, 0, 1, 0]; every number must "
     "be finite (only masked scores may be −inf, where the mask blocks)"),
    ("huge", lambda d: d["stages"]["layers.0.attention.v"]["data"][0][0][0].__setitem__(1, 1e39),
     "That file cannot be shown: stage 'layers.0.attention.v' holds 1e+39 at [0, 0, 0, 1], beyond float32's range "
     "(±3.4e38)"),
])
def test_a_bad_file_through_the_uploader_gives_one_line(server, chromium, tmp_path, name, change, expected):
    doc = tiny()
    change(doc)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))  # json.dumps writes NaN as the literal NaN
    page = send(server, chromium, path)
    assert refusal(page).replace("\u2060", "") == expected
    body = page.inner_text("body").replace(expected, "")
    assert "Traceback" not in body and "nan" not in body.lower().split() and "inf" not in body.lower().split()
    page.close()


def test_control_characters_in_uploaded_tokens_arrive_as_control_pictures(server, chromium, tmp_path):
    doc = tiny()
    doc["tokens"] = [["a\u0000b", "esc\u001b[31m"]]
    path = tmp_path / "controls.json"
    path.write_text(json.dumps(doc))
    page = send(server, chromium, path)
    page.wait_for_selector('[data-testid="stAlert"]:has-text("Showing the uploaded trace")', timeout=120_000)
    wait_idle(page)
    ticks = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .flatMap(d => (d._fullLayout.xaxis && d._fullLayout.xaxis.ticktext) || [])""")
    assert "0: a␀b" in ticks and "1: esc␛[31m" in ticks, ticks
    assert not any("\x00" in t or "\x1b" in t for t in ticks)
    page.close()


def _at_size(size: int) -> str:
    text = json.dumps(tiny())
    return text + " " * (size - len(text.encode()))


def test_the_limit_is_the_same_number_in_the_browser_and_the_app(server, chromium, tmp_path):
    exact = tmp_path / "exact.json"
    exact.write_text(_at_size(UPLOAD_BYTES))
    assert exact.stat().st_size == 32_000_000
    page = send(server, chromium, exact)
    page.wait_for_selector('[data-testid="stAlert"]:has-text("Showing the uploaded trace")', timeout=180_000)
    page.close()
    over = tmp_path / "over.json"
    over.write_text(_at_size(UPLOAD_BYTES + 1))
    page = send(server, chromium, over)
    page.wait_for_selector('[data-testid="stFileUploader"] :text("File must be 32.0MB or smaller")', timeout=60_000)
    assert not page.locator('[data-testid="stAlert"]:has-text("Showing the uploaded trace")').count()
    page.close()
