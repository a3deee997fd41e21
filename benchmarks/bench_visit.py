"""A teacher's link, opened: first heatmap drawn and page settled, per page, in a fresh browser context.

    python benchmarks/bench_visit.py              # medians of 5, straight to one Streamlit server
    python benchmarks/bench_visit.py --nginx      # the class deployment: nginx (static files from disk) + 1 replica
    python benchmarks/bench_visit.py --quick      # CI: one visit of one page, no warm-up visit
    python benchmarks/bench_visit.py --pages explorer,causal --compare /tmp/old   # before → after, interleaved

Each visit is a new browser context (nothing cached, as a student's first click on the link) against a
warm server (one visit of every page first, not counted). Two times from navigation start:

* **first heatmap**: the first ``g.hm image`` (a heatmap's cells drawn) anywhere on the page, seen by a
  MutationObserver installed before the page's own scripts;
* **settled**: every chart drawn and quiet (``bench_bertviz.measure_page``; the quiet wait not counted).

And what the visit carried, until settled (what a first visit costs, in messages and bytes):

* **ws msgs**: websocket frames received from the server (``page.on("websocket")`` → ``framereceived``), and
  **ws sent** the frames the browser sent; **ws KB** the bytes received over the websocket (deltas, figures);
* **JS KB / CSS KB**: bytes of the scripts and style sheets the page loaded (body size as transferred, from
  ``request.sizes()``; Streamlit's lazy chunks, e.g. the data grid's, count only when a page mounts them), and
  **JS files** how many there were. ``--chunks`` lists each visit's largest scripts.

The first row is the reference, page a (``--no-bare`` skips it): a bare HTML page, served from a temporary folder,
that loads ``static/plotly``'s bundle and draws one 12 × 12 heatmap; **× bare** is a page's settled time over that
page's first heatmap (the goals: explorer ≤ 1.0, MiniLM ≤ 1.2).

The load average is printed before and after: on 2 shared cores it moves every number. ``--compare DIR``
starts a second server from another checkout and alternates visits between the two, so load drifts hit both.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks"), str(ROOT / "deploy")]

from bench_bertviz import measure_page, static_server  # noqa: E402
from bench_clicks import server_at  # noqa: E402
from browser_utils import browser, chromium_missing, streamlit_server  # noqa: E402
from cli_args import positive  # noqa: E402  (benchmarks/, beside this script)

TWELVE = "The animal didn't cross the street because it was too tired."
PAGES = {
    "explorer": "/?" + urllib.parse.urlencode({"text": TWELVE}),
    "minilm": "/minilm?" + urllib.parse.urlencode({"text": TWELVE}),
    "causal": "/causal",
    "masks lab": "/masks_lab",
    "pipeline": "/pipeline",
}
# page a, the speed goals' reference: a bare HTML page that loads our plotly.js bundle and draws one 12 × 12 heatmap
BARE_HTML = """<!doctype html><html><head><meta charset="utf-8"><title>one heatmap</title>
<script src="plotly.js"></script></head><body><div id="chart" style="width:700px;height:560px"></div><script>
const tokens = %s, n = tokens.length;
const z = tokens.map((_, i) => tokens.map((_, j) => j <= i ? 1 / (i + 1) : 0));
Plotly.newPlot("chart", [{type: "heatmap", z, x: tokens.map((t, j) => j + ": " + t), y: tokens.map((t, i) => i + ": " + t),
  colorscale: "Blues"}], {margin: {t: 30}, yaxis: {autorange: "reversed"}}, {displaylogo: false});
</script></body></html>"""
FIRST_HEATMAP = """() => { window.__firstHeatmap = null;
  new MutationObserver((_, obs) => {
    if (document.querySelector('g.hm image')) { window.__firstHeatmap = performance.now(); obs.disconnect(); }
  }).observe(document, {childList: true, subtree: true}); }"""


@contextlib.contextmanager
def server(nginx: bool):
    if not nginx:
        with streamlit_server() as url:
            yield url
        return
    import run_local

    with run_local.cluster(1, timeout=180) as c:
        yield c.url


def _watch_traffic(page) -> dict:
    """Websocket frames and finished requests of ``page``, filled in as they happen."""
    seen = {"received": 0, "sent": 0, "ws_bytes": 0, "requests": []}

    def frame_bytes(payload) -> int:
        return len(payload) if isinstance(payload, bytes | bytearray) else len(str(payload).encode())

    def on_received(payload) -> None:
        seen["received"] += 1
        seen["ws_bytes"] += frame_bytes(payload)

    def on_sent(_payload) -> None:
        seen["sent"] += 1

    def on_websocket(ws) -> None:
        ws.on("framereceived", on_received)
        ws.on("framesent", on_sent)

    def on_finished(request) -> None:  # sizes read after the visit (no calls inside a handler)
        seen["requests"].append(request)

    page.on("websocket", on_websocket)
    page.on("requestfinished", on_finished)
    return seen


def _loaded(requests) -> dict:
    """Bytes of the scripts and style sheets among ``requests`` (as transferred) and the scripts by size."""
    out = {"js": 0, "css": 0, "js_files": 0, "scripts": []}
    for req in requests:
        path = urllib.parse.urlparse(req.url).path
        kind = "js" if path.endswith((".js", ".mjs")) else "css" if path.endswith(".css") else None
        if kind is None:
            continue
        try:
            size = req.sizes()["responseBodySize"]
        except Exception:  # noqa: BLE001  (a request whose context is gone: not counted)
            continue
        out[kind] += size
        if kind == "js":
            out["js_files"] += 1
            out["scripts"].append((size, path.rsplit("/", 1)[-1]))
    out["scripts"].sort(reverse=True)
    return out


@contextlib.contextmanager
def bare_page():
    """:data:`BARE_HTML` and ``static/plotly``'s bundle from a temporary folder (``bench_bertviz.static_server``)."""
    import shutil
    import tempfile

    bundle = next((ROOT / "static" / "plotly").glob("plotly-cartesian-*.min.js"), None)
    if bundle is None:
        raise SystemExit("bench_visit: static/plotly holds no bundle: python scripts/fetch_plotly.py")
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(bundle, Path(tmp) / "plotly.js")
        tokens = "[CLS] the animal didn ' t cross the street because it was too tired . [SEP]".split()[:12]
        (Path(tmp) / "index.html").write_text(BARE_HTML % json.dumps(tokens), encoding="utf-8")
        with static_server(Path(tmp)) as base:
            yield base + "/index.html"


@contextlib.contextmanager
def _fresh_page(b):
    """A fresh 1280×720 context's page, its traffic watched and the first heatmap observed; yields (page, seen)."""
    ctx = b.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = ctx.new_page()
        seen = _watch_traffic(page)
        page.add_init_script(f"({FIRST_HEATMAP})()")
        yield page, seen
    finally:
        ctx.close()


def bare_visit(b, url: str) -> dict:
    """The bare page's first heatmap (s from navigation start), in a fresh context; its scripts' bytes."""
    with _fresh_page(b) as (page, seen):
        page.goto(url, wait_until="commit")
        page.wait_for_function("window.__firstHeatmap !== null", polling=50, timeout=60_000)
        first = page.evaluate("window.__firstHeatmap") / 1e3
        return dict(first=first, settled=first, charts=1, received=0, sent=0, ws_bytes=0, **_loaded(seen["requests"]))


def visit(b, url: str) -> dict:
    """One first visit of ``url`` in a fresh context: times (s), charts, websocket frames and bytes, JS/CSS bytes."""
    with _fresh_page(b) as (page, seen):
        settled, charts = measure_page(page, url)
        first = page.evaluate("window.__firstHeatmap")
        counts = dict(received=seen["received"], sent=seen["sent"], ws_bytes=seen["ws_bytes"])  # at settled
        return dict(first=first / 1e3 if first is not None else float("nan"), settled=settled, charts=charts,
                    **counts, **_loaded(seen["requests"]))


def report(rows: list, args, repeats: int) -> None:
    print(f"\nfirst visit, fresh browser context, {'through nginx' if args.nginx else 'direct'}, "
          f"1280×720, median of {repeats}\n")
    floor = next((m["first"] for label, _n, m, _w, _l in rows if label == "bare HTML"), None)
    print("| server | page | first heatmap (s) | settled (s) | settled max (s) | × bare | charts | ws msgs | ws sent "
          "| ws KB | JS KB | JS files | CSS KB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, name, m, worst, last in rows:
        ratio = f"{m['settled'] / floor:.1f}" if floor else "–"
        print(f"| {label} | {name} | {m['first']:.2f} | {m['settled']:.2f} | {worst:.2f} | {ratio} | {last['charts']} "
              f"| {m['received']:.0f} | {m['sent']:.0f} | {m['ws_bytes'] / 1e3:.0f} | {m['js'] / 1e3:.0f} "
              f"| {m['js_files']:.0f} | {m['css'] / 1e3:.0f} |")
    if args.chunks:
        for label, name, _m, _worst, last in rows:
            print(f"\n{label} · {name}: largest scripts (KB as transferred): "
                  + ", ".join(f"{n} {size / 1e3:.0f}" for size, n in last["scripts"][:8]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=positive, default=5)
    parser.add_argument("--nginx", action="store_true", help="through deploy/run_local.py's nginx (1 replica)")
    parser.add_argument("--quick", action="store_true", help="CI (checks that it runs): one visit of one page, "
                                                             "no warm-up visit")
    parser.add_argument("--pages", default="", help=f"comma-separated, of: {', '.join(PAGES)} (default: all)")
    parser.add_argument("--compare", type=Path, help="another checkout (direct, no nginx): visits alternate")
    parser.add_argument("--chunks", action="store_true", help="list each page's largest scripts (last visit)")
    parser.add_argument("--no-bare", action="store_true",
                        help="skip the reference: a bare HTML page drawing one heatmap with static/plotly's bundle")
    args = parser.parse_args()
    if (reason := chromium_missing()):
        print(f"bench_visit: cannot run: {reason}", file=sys.stderr)
        return 1
    wanted = [p.strip() for p in args.pages.split(",") if p.strip()]
    if (unknown := [p for p in wanted if p not in PAGES]):
        print(f"bench_visit: unknown page(s) {', '.join(unknown)}; pages: {', '.join(PAGES)}", file=sys.stderr)
        return 2
    if args.compare is not None and not (args.compare / "app.py").is_file():
        print(f"bench_visit: --compare {args.compare}: not a checkout of this app (no app.py there)", file=sys.stderr)
        return 2
    pages = {k: v for k, v in PAGES.items() if k in wanted} if wanted else PAGES
    if args.quick:
        pages = dict(list(pages.items())[:1])
    repeats = 1 if args.quick else args.repeats
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    rows = []
    with contextlib.suppress(subprocess.TimeoutExpired), contextlib.ExitStack() as stack:  # a server slow to stop
        servers = {"this": stack.enter_context(server(args.nginx))}
        if args.compare:
            servers = {"compared": stack.enter_context(server_at(args.compare)), **servers}
        b = stack.enter_context(browser())
        if not args.no_bare and not args.quick:  # page a: the ratios below are against its median
            bare = stack.enter_context(bare_page())
            bare_visit(b, bare)  # warm (the OS's file cache)
            rs = [bare_visit(b, bare) for _ in range(repeats)]
            med = {k: statistics.median(r[k] for r in rs) for k in ("first", "js", "css", "js_files")}
            rows.append(("bare HTML", "one heatmap", {**med, "settled": med["first"], "received": 0, "sent": 0,
                                                      "ws_bytes": 0}, max(r["first"] for r in rs), rs[-1]))
        for base in [] if args.quick else servers.values():  # warm: models loaded, caches filled
            for path in pages.values():
                visit(b, base + path)
        for name, path in pages.items():
            runs: dict[str, list] = {label: [] for label in servers}
            for _ in range(repeats):
                for label, base in servers.items():
                    runs[label].append(visit(b, base + path))
            for label, rs in runs.items():
                med = {k: statistics.median(r[k] for r in rs)
                       for k in ("first", "settled", "received", "sent", "ws_bytes", "js", "css", "js_files")}
                rows.append((label, name, med, max(r["settled"] for r in rs), rs[-1]))
        report(rows, args, repeats)  # before the servers stop: a slow stop must not lose the table
        print(f"\nload average at end: {os.getloadavg()[0]:.1f}", flush=True)
    return 0

if __name__ == "__main__":
    sys.exit(main())
