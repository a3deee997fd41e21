"""deploy/: 2 Streamlit replicas behind nginx on loopback (deploy/run_local.py, the config compose uses).

* sessions stick to the replica that served their page, across reruns and websocket reconnects
  (the nginx access log shows one upstream per route cookie), and see only their own sentence;
* a cookie-less class behind one address is still spread over both replicas;
* a replica killed with SIGKILL is taken out: new sessions, including ones whose cookie pointed at
  it, are served by the other replica;
* compose.yaml parses and agrees with nginx.conf (checked, not run: no container engine in CI).

Sessions speak Streamlit's websocket protocol (benchmarks/st_session.py): cheap enough for CI on
two shared cores. Skipped with a printed reason only when nginx is not installed.
"""
from __future__ import annotations

import asyncio
import random
import re
import string
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "deploy"), str(ROOT / "benchmarks")]

import run_local  # noqa: E402
from st_session import StreamlitSession  # noqa: E402


def _skip_reason() -> str | None:
    if run_local.nginx_binary() is None:
        return "nginx is not installed (Debian: apt-get install -y nginx; .ci/run installs it)"
    return None


needs_nginx = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))
if _skip_reason():
    print(f"test_deploy_nginx: SKIPPED — {_skip_reason()}")


def marker() -> str:
    return "zq" + "".join(random.choice(string.ascii_lowercase) for _ in range(8))


def get(url: str, cookie: str | None = None):
    req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    return urllib.request.urlopen(req, timeout=30)


def route_cookies(c, per_replica: int, tries: int = 200) -> dict[int, list[str]]:
    """Fresh route cookies from page loads (GET /), grouped by the replica that served the page."""
    out: dict[int, list[str]] = {i: [] for i in range(len(c.replicas))}
    for _ in range(tries):
        resp = get(c.url + "/")
        assert resp.status == 200
        cookies = [h.split(";")[0] for h in resp.headers.get_all("Set-Cookie") or [] if h.startswith("ae_route=")]
        assert len(cookies) == 1, "a page load without the cookie must set it"
        i = c.replica_for(resp.headers["X-AE-Upstream"])
        if len(out[i]) < per_replica:
            out[i].append(cookies[0])
        if all(len(v) == per_replica for v in out.values()):
            return out
    raise AssertionError(f"page loads not spread over the replicas: {out}")


def log_upstreams(c) -> dict[str, set[str]]:
    """route cookie value → set of replicas (last $upstream_addr) in the nginx access log."""
    seen: dict[str, set[str]] = {}
    for line in c.access_log.read_text().splitlines():
        m = re.search(r"route=(\S+) upstream=(\S+(?:, \S+)*) rt=", line)
        if m and m.group(2) != "-":
            seen.setdefault(m.group(1), set()).add(m.group(2).split(",")[-1].strip())
    return seen


async def session_runs(url: str, cookie: str | None, word: str, reconnect: bool = True):
    """Open a session with its own sentence, rerun it twice, reconnect once; return upstreams and runs."""
    s = StreamlitSession(url, cookie=cookie)
    await s.connect()
    upstreams = [s.upstream]
    runs = [await s.rerun(f"text=The+{word}+sat+on+the+mat")]
    runs.append(await s.rerun(widget_states=[("Causal mask", True)]))
    runs.append(await s.rerun(widget_states=[("Padding mask", False)]))
    await s.close()
    if reconnect:  # a network blip: the browser opens a new websocket with the same cookie
        s2 = StreamlitSession(url, cookie=cookie)
        await s2.connect()
        upstreams.append(s2.upstream)
        runs.append(await s2.rerun(f"text=The+{word}+sat+again"))
        await s2.close()
    return upstreams, runs


def check_runs(runs, own: str, others: list[str]) -> None:
    for r in runs:
        assert r.status == "FINISHED_SUCCESSFULLY" and not r.exceptions, (r.status, r.exceptions)
        assert own.encode() in r.payload, "the session's own sentence is missing from its run"
        leaked = [o for o in others if o.encode() in r.payload]
        assert not leaked, f"cross-session leak: {leaked} in the session of {own}"


@needs_nginx
def test_sticky_sessions_and_failover():
    with run_local.cluster(2, timeout=120) as c:
        import psutil
        for r in c.replicas:  # one PyTorch thread per replica (run_local.REPLICA_ENV)
            assert psutil.Process(r.proc.pid).environ().get("OMP_NUM_THREADS") == "1"
        cookies = route_cookies(c, per_replica=2)
        plan = [(i, ck, marker()) for i, cks in cookies.items() for ck in cks]
        words = [w for _, _, w in plan]

        async def all_sessions():
            return await asyncio.gather(*(session_runs(c.url, ck, w) for _, ck, w in plan))

        results = asyncio.run(all_sessions())
        for (i, ck, word), (upstreams, runs) in zip(plan, results):
            assert {c.replica_for(u) for u in upstreams} == {i}, \
                f"websocket of a page served by replica {i} went to {upstreams}"
            check_runs(runs, word, [w for w in words if w != word])
        # The access log agrees: every request of a cookie (page, assets, websocket) on one replica.
        seen = log_upstreams(c)
        for i, ck, _ in plan:
            assert seen[ck.split("=", 1)[1]] == {c.replicas[i].addr}, seen[ck.split("=", 1)[1]]

        # A class behind one NAT (same address, no cookies yet) is spread over both replicas.
        spread = {c.replica_for(get(c.url + "/").headers["X-AE-Upstream"]) for _ in range(24)}
        assert spread == {0, 1}

        # Kill replica 0: its students and new students are served by replica 1.
        c.replicas[0].kill()
        orphan_cookie, orphan_word = cookies[0][0], marker()
        fresh = [marker() for _ in range(3)]

        async def after_kill():
            return await asyncio.gather(session_runs(c.url, orphan_cookie, orphan_word),
                                        *(session_runs(c.url, None, w, reconnect=False) for w in fresh))

        results = asyncio.run(after_kill())
        for (upstreams, runs), word in zip(results, [orphan_word, *fresh]):
            assert {c.replica_for(u) for u in upstreams} == {1}, upstreams
            check_runs(runs, word, [w for w in [orphan_word, *fresh] if w != word])
        for _ in range(6):
            resp = get(c.url + "/", cookie=orphan_cookie)
            assert resp.status == 200 and c.replica_for(resp.headers["X-AE-Upstream"]) == 1
            assert get(c.url + "/_stcore/health").read() == b"ok"


def test_compose_and_nginx_config_agree():
    import yaml

    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    services = compose["services"]
    apps = sorted(s for s in services if re.fullmatch(r"app\d+", s))
    assert len(apps) >= 2
    conf = (ROOT / "deploy" / "nginx.conf").read_text()
    upstream_servers = re.findall(r"(?m)^\s*server\s+(app\d+):8501\b", conf)
    assert sorted(upstream_servers) == apps, "every app service is in nginx's upstream and vice versa"
    for name in apps:
        app = services[name]
        assert "8501" in [str(p) for p in app["expose"]]
        assert "/_stcore/health" in " ".join(app["healthcheck"]["test"])
        assert "STREAMLIT_SERVER_COOKIE_SECRET" in app["environment"]
        for name, value in run_local.REPLICA_ENV.items():  # compose and the local cluster run replicas alike
            assert str(app["environment"].get(name)) == value, (name, app["environment"].get(name))
        assert app["build"]["context"] == ".." and (ROOT / app["build"]["dockerfile"]).exists()
    ngx = services["nginx"]
    assert "./nginx.conf:/etc/nginx/conf.d/default.conf:ro" in ngx["volumes"]
    assert set(ngx["depends_on"]) == set(apps) | {"static"}
    assert ngx["depends_on"]["static"]["condition"] == "service_completed_successfully"
    assert "static:/srv/streamlit-static:ro" in ngx["volumes"] and "root /srv/streamlit-static;" in conf
    assert services["static"]["command"][1:] == ["deploy/precompress_static.py", "/srv/streamlit-static"]
    for directive in ("hash $ae_route_key consistent", "proxy_set_header Upgrade $http_upgrade",
                      "max_fails=", "fail_timeout=", "proxy_next_upstream "):
        assert directive in conf
    upload_cap_mb = int(re.search(r"(?m)^maxUploadSize\s*=\s*(\d+)", (ROOT / ".streamlit" / "config.toml")
                                  .read_text()).group(1))
    assert f"client_max_body_size {upload_cap_mb}m;" in conf, "nginx and Streamlit upload caps differ"
    from ui.explorer.traces import UPLOAD_MB
    assert UPLOAD_MB == upload_cap_mb, "the trace check's size limit and Streamlit's upload cap differ"


def test_no_other_site_may_frame_the_app():
    """X-Frame-Options: SAMEORIGIN and CSP frame-ancestors 'self' on every response, errors too (always): at the
    server level and in every location that has add_header lines of its own (nginx gives such a location none of
    the server's)."""
    conf = (ROOT / "deploy" / "nginx.conf").read_text()
    wanted = ['add_header X-Frame-Options "SAMEORIGIN" always;',
              'add_header Content-Security-Policy "frame-ancestors \'self\'" always;']
    server = conf[conf.index("server {"):]
    blocks = re.split(r"\n    location ", server)
    assert len(blocks) > 3
    for block in blocks:  # the server's own lines, then each location
        if "add_header" in re.sub(r"(?m)^\s*#.*$", "", block):
            assert all(w in block for w in wanted), block.splitlines()[0]
    assert all(w in blocks[0] for w in wanted)


@needs_nginx
def test_rendered_config_passes_nginx_t(tmp_path):
    (tmp_path / "tmp").mkdir()
    conf = tmp_path / "nginx.conf"
    conf.write_text(run_local.render_config(tmp_path, 8080, [8601, 8602, 8603]))
    out = subprocess.run([run_local.nginx_binary(), "-t", "-p", str(tmp_path), "-c", str(conf)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert conf.read_text().count("server 127.0.0.1:86") == 3


@needs_nginx
@pytest.mark.browser
def test_browser_reconnects_to_a_live_replica_with_its_url_state():
    """A student's page whose replica dies reconnects through nginx to the other one and gets
    its sentence back from its URL (Streamlit's own client reconnects; the view is re-created)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from browser_utils import browser, chromium_missing

    if chromium_missing():
        print(f"test_browser_reconnects…: SKIPPED — {chromium_missing()}")
        pytest.skip(chromium_missing())
    word = marker()
    with run_local.cluster(2, timeout=120) as c:
        # Both replicas warm (torch imported, first run done), as in a class already under way.
        warm = route_cookies(c, per_replica=1)

        async def warm_up():
            await asyncio.gather(*(session_runs(c.url, cks[0], marker(), reconnect=False) for cks in warm.values()))

        asyncio.run(warm_up())
        with browser() as b:
            _reconnect_in_browser(c, b, word)


def _reconnect_in_browser(c, b, word: str) -> None:
        ctx = b.new_context()
        page = ctx.new_page()
        page.goto(f"{c.url}/?text=The+{word}+sat+on+the+mat&causal=1")
        box = page.get_by_role("textbox", name="Sentences (one per line)", exact=True)
        page.wait_for_function("(w) => { const t = document.querySelector('textarea');"
                               " return !!t && t.value.includes(w); }",
                               arg=word, timeout=120_000)
        cookie = next(f"{k['name']}={k['value']}" for k in ctx.cookies() if k["name"] == "ae_route")
        served = c.replica_for(get(c.url + "/_stcore/health", cookie=cookie).headers["X-AE-Upstream"])
        page.evaluate("""() => { window.__sawStatus = false;
            new MutationObserver(() => { if (document.querySelector('[data-testid="stStatusWidget"]'))
                window.__sawStatus = true; }).observe(document.body, {subtree: true, childList: true}); }""")
        c.replicas[served].kill()
        # Streamlit's client notices (its connection status shows), reconnects through nginx to the
        # other replica and reruns there with the page's URL: the sentence comes back.
        page.wait_for_function("(w) => { const t = document.querySelector('textarea');"
                               " return window.__sawStatus && !!t && t.value.includes(w)"
                               " && !document.querySelector('[data-testid=\"stStatusWidget\"]'); }",
                               arg=word, timeout=90_000)
        # The page reruns on the survivor by itself (ui.shell.failover.resync_on_reconnect) and tells the student,
        # in the page, what happened and what came back; then a click counts there (the sentence and a drawn heatmap
        # are there afterwards; the access log below shows the websocket on the survivor).
        notice = page.get_by_test_id("stAlertContentInfo").get_by_text("Reconnected to another server")
        notice.wait_for(timeout=90_000)
        page.get_by_test_id("stSidebarUserContent").get_by_text("Causal mask", exact=True).click(timeout=90_000)
        page.wait_for_function("(w) => { const t = document.querySelector('textarea');"
                               " return !!t && t.value.includes(w)"
                               " && !document.querySelector('[data-testid=\"stStatusWidget\"]')"
                               " && !!document.querySelector('.js-plotly-plot g.hm image'); }",
                               arg=word, timeout=90_000)
        assert f"text=The+{word}+sat" in page.url
        page.wait_for_function("() => location.search.includes('causal=0')", timeout=30_000)  # the click counted
        ctx.close()  # nginx logs a websocket when it closes
        survivor = 1 - served
        deadline = time.time() + 10
        while time.time() < deadline:
            streams = [line for line in c.access_log.read_text().splitlines()
                       if "/_stcore/stream" in line and f"route={cookie.split('=', 1)[1]}" in line]
            if any(line.rstrip().split("upstream=")[1].split(" rt=")[0].split(",")[-1].strip()
                   == c.replicas[survivor].addr for line in streams):
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"no websocket of the page reached the surviving replica: {streams}")
