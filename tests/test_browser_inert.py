"""User text stays inert, in headless Chromium: text from a link, the text box or an uploaded file
renders as plain text in notes, pickers, the masks lab's row note and figures: no clickable foreign link
(``<a>``), no icon span, and the text reads exactly as typed."""
from __future__ import annotations

import json
import urllib.parse

import pytest

from browser_utils import ARTIFACTS, chromium_missing, wait_idle
from ui.shell.markdown import WORD_JOINER

_missing = chromium_missing()
if _missing:
    print(f"SKIPPING browser inert-text tests: {_missing}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

HOSTILE = ["see http://evil.example/login", ":material/delete: now", "mail x@evil.example or www.evil.example",
           "**bold** [Log in](https://evil.example) $x$"]


def visit(chromium, url: str):
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    wait_idle(page)
    return page


def assert_inert(page, quoted: tuple[str, ...] = ("evil", ":material/")) -> None:
    """No link to another site anywhere (HTML or a figure's SVG), no icon made from text inside Markdown, and
    no formatting (link, emphasis, image, code, LaTeX) inside any Markdown that quotes the hostile text."""
    found = page.evaluate("""(quoted) => ({
        links: Array.from(document.querySelectorAll('a'))
                    .map(a => a.getAttribute('href') || a.getAttribute('xlink:href') || '')
                    .filter(h => /evil|mailto:|^www\\.|^\\/\\//i.test(h)
                                 || (/^https?:/i.test(h) && !h.startsWith(location.origin))),
        icons: document.querySelectorAll('[data-testid="stMarkdownContainer"] [data-testid="stIconMaterial"]').length,
        images: Array.from(document.querySelectorAll('[data-testid="stMarkdownContainer"] img')).map(i => i.src),
        formatted: Array.from(document.querySelectorAll('[data-testid="stMarkdownContainer"]'))
                   .filter(e => quoted.some(q => e.textContent.replaceAll('\u2060', '').includes(q)))
                   .flatMap(e => Array.from(e.querySelectorAll('a, em, img, code, .katex')).map(x => x.outerHTML)),
    })""", list(quoted))
    assert found == {"links": [], "icons": 0, "images": [], "formatted": []}, found


def texts(page, selector: str) -> list[str]:
    return [t.replace(WORD_JOINER, "") for t in page.locator(selector).all_inner_texts()]


def picker_options(page, label: str) -> list[str]:
    """Open the selectbox labelled ``label`` and read its options as shown (the first click can land while
    the page is still settling, so it is retried)."""
    box = page.locator('[data-testid="stSelectbox"]', has_text=label).first.locator("input")
    for _ in range(10):
        box.click()
        try:
            page.wait_for_selector('[role="option"]', timeout=3000)
            break
        except Exception:  # noqa: BLE001 playwright's TimeoutError: not open yet
            page.keyboard.press("Escape")
            page.wait_for_timeout(1000)
    options = page.locator('[role="option"]').all_inner_texts()
    has_markup = page.evaluate("""() => Array.from(document.querySelectorAll('[role="option"]'))
        .some(o => o.querySelector('a, strong, img, [data-testid="stIconMaterial"]'))""")
    page.keyboard.press("Escape")
    assert options and not has_markup
    return options


def test_url_notes_and_the_explorer_picker_are_plain_text(server, chromium):
    query = urllib.parse.urlencode({"seed": "www.evil.example", "n_heads": "see http://evil.example/login",
                                    "text": "\n".join(HOSTILE), "stage": ":material/delete:"})
    page = visit(chromium, f"{server}/?{query}")
    assert_inert(page)
    alerts = " ".join(texts(page, '[data-testid="stAlert"]'))
    for quoted in ("URL parameter seed=www.evil.example ignored", "URL parameter n_heads=see http://evil.example/login "
                   "ignored", "URL parameter stage=:material/delete: ignored"):
        assert quoted in alerts, alerts
    # the explorer labels a sentence by its tokens, joined by spaces
    assert picker_options(page, "Sentence") == ["0: see http : / / evil . example…", "1: : material / delete : now",
                                                "2: mail x @ evil . example or…", "3: * * bold * * [ Log in ] (…"]
    assert_inert(page)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "inert_explorer.png"))
    page.close()


def test_pipeline_picker_is_plain_text(server, chromium):
    page = visit(chromium, f"{server}/pipeline?" + urllib.parse.urlencode({"text": "\n".join(HOSTILE)}))
    assert_inert(page)
    assert picker_options(page, "Sentence to follow") == [
        "0: see http://evil.example/login", "1: :material/delete: now", "2: mail x@evil.example or www.evil.example",
        "3: **bold** [Log in](https://evil.example)…"]
    page.close()


def test_masks_lab_keeps_a_backslash_token(server, chromium):
    page = visit(chromium, f"{server}/masks_lab?text=%5C%20x%0Aq%20r%20s%20t%20u&section=Two%20conventions")
    assert_inert(page, ("Row 0 (\\)",))
    rows = [t for t in texts(page, '[data-testid="stMarkdownContainer"]') if t.startswith("Row 0")]
    assert rows and rows[0].startswith("Row 0 (\\), no visible key"), rows
    assert picker_options(page, "Query row")[:2] == ["0: \\", "1: x"]
    page.close()


def test_an_uploaded_files_text_is_plain(server, chromium, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "see http://evil.example/login [x](https://evil.example) :material/delete:"}),
                   encoding="utf-8")
    page = visit(chromium, server + "/")
    page.get_by_text("Tokens, downloads and reopening a saved trace").click()
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(bad))
    page.wait_for_selector('[data-testid="stAlert"]:has-text("cannot be shown")', timeout=60_000)
    wait_idle(page)
    assert_inert(page)
    note = next(t for t in texts(page, '[data-testid="stAlert"]') if "cannot be shown" in t)
    assert note.endswith("found 'see http://evil.example/login [x](https://evil.example) :material/delete:'"), note
    page.close()
