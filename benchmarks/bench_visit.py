"""A teacher's link, opened: first heatmap drawn and page settled, per page, in a fresh browser context.

    python benchmarks/bench_visit.py              # medians of 5, straight to one Streamlit server
    python benchmarks/bench_visit.py --nginx      # the class deployment: nginx (static files from disk) + 1 replica
    python benchmarks/bench_visit.py --quick      # CI: one visit of two pages
    python benchmarks/bench_visit.py --pages explorer,causal --compare /tmp/old   # before → after, interleaved

Each visit is a new browser context (nothing cached, as a student's first click on the link) against a
warm server (one visit of every page first, not counted). Two times from navigation start:

* **first heatmap**: the first ``g.hm image`` (a heatmap's cells drawn) anywhere on the page, seen by a
  MutationObserver installed before the page's own scripts;
* **settled**: every chart drawn and quiet (``bench_bertviz.measure_page``; the quiet wait not counted).

The load average is printed before and after: on 2 shared cores it moves every number. ``--compare DIR``
starts a second server from another checkout and alternates visits between the two, so load drifts hit both.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks"), str(ROOT / "deploy")]

from bench_bertviz import measure_page  # noqa: E402
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


def visit(b, url: str) -> tuple[float, float, int]:
    ctx = b.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = ctx.new_page()
        page.add_init_script(f"({FIRST_HEATMAP})()")
        settled, charts = measure_page(page, url)
        first = page.evaluate("window.__firstHeatmap")
        return (first / 1e3 if first is not None else float("nan")), settled, charts
    finally:
        ctx.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=positive, default=5)
    parser.add_argument("--nginx", action="store_true", help="through deploy/run_local.py's nginx (1 replica)")
    parser.add_argument("--quick", action="store_true", help="one visit of two pages (CI)")
    parser.add_argument("--pages", default="", help=f"comma-separated, of: {', '.join(PAGES)} (default: all)")
    parser.add_argument("--compare", type=Path, help="another checkout (direct, no nginx): visits alternate")
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
        pages = dict(list(pages.items())[:2])
    repeats = 1 if args.quick else args.repeats
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    rows = []
    with contextlib.ExitStack() as stack:
        servers = {"this": stack.enter_context(server(args.nginx))}
        if args.compare:
            servers = {"compared": stack.enter_context(server_at(args.compare)), **servers}
        b = stack.enter_context(browser())
        for base in servers.values():  # warm: models loaded, caches filled
            for path in pages.values():
                visit(b, base + path)
        for name, path in pages.items():
            runs: dict[str, list] = {label: [] for label in servers}
            for _ in range(repeats):
                for label, base in servers.items():
                    runs[label].append(visit(b, base + path))
            for label, rs in runs.items():
                rows.append((label, name, statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs),
                             max(r[1] for r in rs), rs[-1][2]))
    print(f"\nfirst visit, fresh browser context, {'through nginx' if args.nginx else 'direct'}, "
          f"1280×720, median of {repeats}\n")
    print("| server | page | first heatmap (s) | settled (s) | settled max (s) | charts |")
    print("|---|---|---:|---:|---:|---:|")
    for label, name, first, settled, worst, charts in rows:
        print(f"| {label} | {name} | {first:.2f} | {settled:.2f} | {worst:.2f} | {charts} |")
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
