"""Bytes a class pulls through nginx: compressed static files, a first visit ≤ 3 MB, a second ≤ 0.3 MB.

Streamlit 1.67 sends no ``Content-Encoding`` itself; deploy/nginx.conf compresses (gzip). Measured the
way a student's browser sees it: Chromium's own transfer sizes (the Resource Timing API's
``transferSize``: bytes on the wire, headers included, 0 for a file served from the browser cache) for
every request of a first visit in a fresh context, then of a second visit in the same context.
"""
from __future__ import annotations

import re
import sys
import urllib.request
from pathlib import Path

import pytest

from browser_utils import browser, chromium_missing, wait_idle

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "deploy")]

import run_local  # noqa: E402

# Browsers ask for brotli only in a secure context (https:// or localhost, as here); a plain-http LAN gets gzip.
FIRST_VISIT_MAX = 3_000_000 if run_local.BROTLI_MODULE.exists() else 3_400_000
SECOND_VISIT_MAX = 300_000

skip = run_local.nginx_binary() is None and "nginx is not installed (apt-get install -y nginx)" or chromium_missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(skip), reason=str(skip))]

TRANSFER = """() => performance.getEntriesByType('resource').concat(performance.getEntriesByType('navigation'))
    .map(e => ({name: e.name, transfer: e.transferSize, body: e.decodedBodySize}))"""


def fetch(url: str, encoding: str | None):
    req = urllib.request.Request(url, headers={"Accept-Encoding": encoding} if encoding else {})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.headers, resp.read()


def test_static_files_are_gzipped_and_a_visit_stays_small():
    with run_local.cluster(1, timeout=120) as c:
        _, index = fetch(c.url + "/", None)
        script = re.search(rb'src="\.?/?(static/js/[^"]+\.js)"', index)
        assert script, index[:500]
        url = f"{c.url}/{script.group(1).decode()}"
        headers, body = fetch(url, "gzip")
        assert headers.get("Content-Encoding") == "gzip"
        assert headers.get("Cache-Control") == "public, max-age=31536000, immutable"  # served by nginx from disk
        plain_headers, plain = fetch(url, None)
        assert plain_headers.get("Content-Encoding") is None  # a client that cannot gunzip gets plain bytes
        assert len(body) < 0.5 * len(plain)
        bundle = f"{c.url}/app/static/plotly/plotly-cartesian-4.1.1.min.js"  # our chart element's plotly.js
        headers, body = fetch(bundle, "gzip")
        assert headers.get("Content-Encoding") == "gzip" and len(body) < 600_000, (headers, len(body))
        assert headers.get("Cache-Control") == "public, max-age=31536000, immutable"
        assert headers.get("Content-Type", "").startswith("application/javascript")

        with browser() as b:
            ctx = b.new_context(viewport={"width": 1280, "height": 720})
            page = ctx.new_page()
            page.goto(c.url + "/?text=The+cat+sat+on+the+mat.", wait_until="load")
            wait_idle(page)
            first = page.evaluate(TRANSFER)
            page.goto(c.url + "/?text=A+dog+ran.", wait_until="load")
            wait_idle(page)
            second = page.evaluate(TRANSFER)
            ctx.close()
    first_bytes = sum(e["transfer"] for e in first)
    decoded = sum(e["body"] for e in first)
    second_bytes = sum(e["transfer"] for e in second)
    print(f"first visit: {first_bytes / 1e6:.2f} MB on the wire ({decoded / 1e6:.2f} MB decoded, "
          f"{len(first)} requests); second visit: {second_bytes / 1e6:.3f} MB")
    assert decoded > 2 * first_bytes  # compression really happened on the page's own requests
    assert first_bytes <= FIRST_VISIT_MAX
    assert second_bytes <= SECOND_VISIT_MAX
    plotly_js = [e for e in first + second if "/app/static/plotly/" in e["name"]]
    assert len(plotly_js) >= 2 and all(e["transfer"] == 0 for e in plotly_js[1:]), plotly_js  # once per browser
