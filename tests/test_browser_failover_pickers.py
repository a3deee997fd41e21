"""End to end: the head picker never disagrees with the figure, after a failover as after an edit.

A student on the explorer at ``head=2`` under deploy/run_local.py (nginx, two replicas) opens head 5 by a tile click;
then the replica that serves the page is killed three times (and started again, as run_local.py's supervisor does),
with a click on tile 1 after the first kill. After each click and each kill, the Head picker's displayed value, the
focused figure's head (its title and ``layout.meta.head``) and ``head=`` in the URL must name the same head (the bug:
once in three kills, the picker at 0 while the figure and the URL said 2).

After each kill the page must rerun whole by itself (its notice shows) and the tile click after it must count: a tile
is inside a fragment, and before ui.shell.failover.resync_on_reconnect the new server skipped a fragment rerun it had
never registered, so that click was lost (the view stayed on head 5).
"""
from __future__ import annotations

import re
import sys
import urllib.parse
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "deploy"), str(ROOT / "tests")]

import run_local  # noqa: E402
from test_deploy_nginx import get, needs_nginx  # noqa: E402

TEXT = "The animal didn't cross the street because it was too tired."
FOCUS = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .find(d => d.layout && d.layout.meta && d.layout.meta.head !== undefined && d.layout.meta.stage !== 'heads')"""
TILES = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .find(d => d.layout && d.layout.meta && d.layout.meta.stage === 'heads')"""


def agreement(page) -> dict:
    """What the picker shows, what the focused figure draws (its title's head and its meta) and what the URL says.

    Waits for the focused figure first: after a kill the page reruns whole, and its figure may still be on its way
    when the status widget has gone (CI once read the page between the two). A figure that never comes fails here."""
    page.wait_for_function(f"() => !!({FOCUS})() && !!({FOCUS})().layout.annotations", timeout=60_000)
    title = page.evaluate(f"() => ({FOCUS})().layout.annotations.find(a => a.name === 'title').text")
    found = re.search(r"head (\d+) ·", title)
    params = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)
    picker = page.locator('[data-testid="stSelectbox"]').filter(
        has=page.get_by_text("Head", exact=True)).first.locator("input")  # not the sidebar's n_heads
    return {"picker": picker.input_value(),
            "title": found.group(1) if found else title,
            "meta": str(page.evaluate(f"() => ({FOCUS})().layout.meta.head")),
            "url": (params.get("head") or ["(none)"])[0]}


def settle(page) -> None:
    from browser_utils import wait_idle

    wait_idle(page, timeout_ms=180_000)
    page.wait_for_timeout(1500)  # a picker's label is drawn after the figure's message


def click_tile(page, head: int) -> None:
    x, y = page.evaluate(f"""(h) => {{ const d = ({TILES})();
        const p = d.querySelectorAll('.scatterlayer .point')[h];
        p.scrollIntoView({{block: 'center'}});
        const r = p.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }}""", head)
    page.mouse.click(x, y)
    try:
        page.wait_for_function(f"() => new URLSearchParams(location.search).get('head') === '{head}'", timeout=60_000)
        return True
    except Exception:
        return False


@needs_nginx
@pytest.mark.browser
def test_head_picker_figure_and_url_agree_after_three_kills(tmp_path):
    from browser_utils import browser, chromium_missing

    if chromium_missing():
        pytest.skip(chromium_missing())
    query = {"text": TEXT, "stage": "weights", "head": "2"}
    seen = []
    with run_local.cluster(2, timeout=120) as c, browser() as b:
        ctx = b.new_context(viewport={"width": 1280, "height": 720})
        page = ctx.new_page()
        page.goto(f"{c.url}/?{urllib.parse.urlencode(query)}")
        settle(page)
        seen.append(("start", agreement(page)))
        took = click_tile(page, 5)  # an edit before any kill
        settle(page)
        seen.append(("tile 5" + ("" if took else " (the click was lost)"), agreement(page)))
        print(seen, flush=True)
        cookie = next(f"{k['name']}={k['value']}" for k in ctx.cookies() if k["name"] == "ae_route")
        now = c.replica_for(get(c.url + "/_stcore/health", cookie=cookie).headers["X-AE-Upstream"])
        for kill, then in enumerate((1, None, None)):
            # the replica the page's websocket is on: the cookie may name a replica restarted since (nginx would
            # send a new request there, while the page stays on the one it moved to)
            served = now
            page.evaluate("""() => { window.__sawStatus = false;
                new MutationObserver(() => { if (document.querySelector('[data-testid="stStatusWidget"]'))
                    window.__sawStatus = true; }).observe(document.body, {subtree: true, childList: true}); }""")
            c.replicas[served].kill()
            page.wait_for_function(
                "() => window.__sawStatus && !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                timeout=120_000)
            # the page reruns whole on its own once reconnected (ui.shell.failover.resync_on_reconnect): the notice
            page.get_by_test_id("stAlertContentInfo").get_by_text("Reconnected to another server").wait_for(
                timeout=120_000)
            settle(page)
            page.screenshot(path=str(tmp_path / f"after_kill_{kill}.png"))
            cookie = next(f"{k['name']}={k['value']}" for k in ctx.cookies() if k["name"] == "ae_route")
            now = c.replica_for(get(c.url + "/_stcore/health", cookie=cookie).headers["X-AE-Upstream"])
            notice = page.get_by_test_id("stAlertContentInfo").get_by_text("Reconnected to another server").count()
            seen.append((f"kill {kill} (replica {served} → {now}, notice {notice})", agreement(page)))
            print(seen[-1], flush=True)
            assert now != served, "the student's page must now be served by the other replica"
            c.replicas[served].restart(c.extra["env"])  # as run_local.supervise does: the class has two again
            run_local.wait_until(lambda r=c.replicas[served]: run_local.healthy(f"http://{r.addr}/_stcore/health"),
                                 120, f"replica {served} restarted")
            if then is not None:  # an edit on the replica the student moved to
                took = click_tile(page, then)
                settle(page)
                seen.append((f"tile {then}" + ("" if took else " (the click was lost)"), agreement(page)))
                print(seen[-1], flush=True)
                # a tile is inside a fragment the new server knew nothing of before the page reran whole
                assert took, "the first tile click after the failover was lost"
        assert page.get_by_test_id("stException").count() == 0
        ctx.close()
    print("\n" + "\n".join(f"{when}: {state}" for when, state in seen))
    expected = {"start": "2", "tile 5": "5", "tile 1": "1"}
    last = None
    for when, state in seen:
        last = expected.get(when, last)
        assert set(state.values()) == {last}, (when, state)  # picker, title, meta and URL: the same head
