"""Where a click's time goes in the browser: Chromium's CPU profiler over a few clicks, summed by source.

    python benchmarks/bench_click_profile.py                 # the causal page's mask toggle, 3 clicks
    python benchmarks/bench_click_profile.py --page explorer --label "Causal mask" --clicks 5
    python benchmarks/bench_click_profile.py --visit --clicks 3   # instead: 3 first visits, until the first heatmap
    python benchmarks/bench_click_profile.py --quick         # CI: one click on the explorer

``--visit`` profiles a link's first visit in a fresh browser context (nothing cached; one visit first, not counted)
from navigation until the first heatmap is drawn, per visit.

The profile (CDP ``Profiler``, 0.2 ms samples) runs from just before the first click until 2.5 s after the last; each
click first once unprofiled (the second value a session has not seen is not counted). Printed per click: the browser's
own work outside JavaScript ("(program)": style, layout, paint), the garbage collector, and JavaScript by script file
(plotly.js, React, Streamlit's bundles, our element), then the busiest functions. Idle time is left out. The trace
behind "where the time goes" in docs/benchmarks.md: the clicks' medians are ``bench_clicks.py``'s.
"""
from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from browser_utils import browser, chromium_missing, streamlit_server, wait_idle  # noqa: E402
from cli_args import positive  # noqa: E402

PAGES = {"causal": ("/causal", "Mask the future (as trained)"), "explorer": ("/", "Causal mask")}


def source(frame: dict) -> str:
    """A profile node's script file (its name, not its URL), or the profiler's own category."""
    url = frame["url"].rsplit("/", 1)[-1]
    if url:
        return "our element (chart.js)" if len(url) == 36 and url.count("-") == 4 else url  # components.v2's blob
    return frame["functionName"] or "(native)"


def profile(page_name: str, label: str, clicks: int) -> tuple[collections.Counter, collections.Counter]:
    path, _default = PAGES[page_name]
    with streamlit_server() as url, browser() as b:
        page = b.new_page(viewport={"width": 1280, "height": 720})
        page.goto(url + path)
        page.wait_for_function("() => !!document.querySelector('.js-plotly-plot g.hm image')", timeout=180_000)
        wait_idle(page)
        page.wait_for_timeout(1500)
        target = page.get_by_text(label, exact=True).first
        target.click()  # the other value, once: not counted
        page.wait_for_timeout(2500)
        cdp = page.context.new_cdp_session(page)
        cdp.send("Profiler.enable")
        cdp.send("Profiler.setSamplingInterval", {"interval": 200})
        cdp.send("Profiler.start")
        for _ in range(clicks):
            target.click()
            page.wait_for_timeout(2500)
        result = cdp.send("Profiler.stop")["profile"]
    by_source, by_function = collections.Counter(), collections.Counter()
    add(result, clicks, by_source, by_function)
    return by_source, by_function


def profile_visits(page_name: str, visits: int) -> tuple[collections.Counter, collections.Counter]:
    """As :func:`profile`, over ``visits`` first visits of the page (a fresh context each), until its first heatmap."""
    path, _label = PAGES[page_name]
    by_source, by_function = collections.Counter(), collections.Counter()
    with streamlit_server() as url, browser() as b:
        for visit in range(visits + 1):
            context = b.new_context(viewport={"width": 1280, "height": 720})
            page = context.new_page()
            cdp = context.new_cdp_session(page)
            cdp.send("Profiler.enable")
            cdp.send("Profiler.setSamplingInterval", {"interval": 200})
            cdp.send("Profiler.start")
            page.goto(url + path)
            page.wait_for_function("() => !!document.querySelector('g.hm image')", timeout=180_000)
            result = cdp.send("Profiler.stop")["profile"]
            context.close()
            if visit:  # the first one warms the server: not counted
                add(result, visits, by_source, by_function)
    return by_source, by_function


def add(result: dict, runs: int, by_source: collections.Counter, by_function: collections.Counter) -> None:
    """One CDP profile's samples, in ms per run, into the counters (idle time left out)."""
    nodes = {n["id"]: n["callFrame"] for n in result["nodes"]}
    for node, micros in zip(result["samples"], result["timeDeltas"]):
        frame = nodes[node]
        where = source(frame)
        if where != "(idle)":
            by_source[where] += micros / 1000 / runs
            by_function[f"{frame['functionName'] or '(anonymous)'} · {where}"] += micros / 1000 / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", choices=sorted(PAGES), default="causal")
    parser.add_argument("--label", help="the text of what to click (default: the page's mask toggle)")
    parser.add_argument("--clicks", type=positive, default=3)
    parser.add_argument("--top", type=positive, default=12, help="how many functions to list")
    parser.add_argument("--visit", action="store_true", help="profile first visits instead (--clicks of them)")
    parser.add_argument("--quick", action="store_true", help="one click on the explorer (CI)")
    args = parser.parse_args()
    if missing := chromium_missing():
        sys.exit(f"cannot profile: {missing}")
    page_name, clicks = ("explorer", 1) if args.quick else (args.page, args.clicks)
    label = args.label or PAGES[page_name][1]
    if args.visit and not args.quick:
        by_source, by_function = profile_visits(page_name, clicks)
        what, unit = f"{clicks} first visit(s) until the first heatmap", "visit"
    else:
        by_source, by_function = profile(page_name, label, clicks)
        what, unit = f"click on {label!r}, {clicks} click(s)", "click"
    total = sum(by_source.values())
    print(f"\n{page_name} page, {what} profiled at 1280×720: {total:.0f} ms of CPU in the browser per {unit} "
          "(idle left out)\n")
    print(f"| source | ms per {unit} | share |\n|---|---:|---:|")
    for where, ms in by_source.most_common(10):
        print(f"| {where} | {ms:.1f} | {ms / total:.0%} |")
    print(f"\n| function · source | ms per {unit} |\n|---|---:|")
    for name, ms in by_function.most_common(args.top):
        print(f"| {name} | {ms:.1f} |")


if __name__ == "__main__":
    main()
