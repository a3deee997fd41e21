"""Where a click's time goes in the browser: Chromium's CPU profiler over a few clicks, summed by source.

    python benchmarks/bench_click_profile.py                 # the causal page's mask toggle, 3 clicks
    python benchmarks/bench_click_profile.py --page explorer --label "Causal mask" --clicks 5
    python benchmarks/bench_click_profile.py --quick         # CI: one click on the explorer

The profile (CDP ``Profiler``, 0.2 ms samples) runs from just before the first click until 2.5 s after the last; each
click first once unprofiled (the second value a session has not seen is not counted). Printed per click: the browser's
own work outside JavaScript ("(program)": style, layout, paint), the garbage collector, and JavaScript by script file
(plotly.js, React, Streamlit's bundles, our element), then the busiest functions. Idle time is left out. The trace
behind issue 37's "where the time goes": the clicks' medians are ``bench_clicks.py``'s.
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
    nodes = {n["id"]: n["callFrame"] for n in result["nodes"]}
    by_source, by_function = collections.Counter(), collections.Counter()
    for node, micros in zip(result["samples"], result["timeDeltas"]):
        frame = nodes[node]
        where = source(frame)
        if where == "(idle)":
            continue
        by_source[where] += micros / 1000 / clicks
        by_function[f"{frame['functionName'] or '(anonymous)'} · {where}"] += micros / 1000 / clicks
    return by_source, by_function


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", choices=sorted(PAGES), default="causal")
    parser.add_argument("--label", help="the text of what to click (default: the page's mask toggle)")
    parser.add_argument("--clicks", type=positive, default=3)
    parser.add_argument("--top", type=positive, default=12, help="how many functions to list")
    parser.add_argument("--quick", action="store_true", help="one click on the explorer (CI)")
    args = parser.parse_args()
    if missing := chromium_missing():
        sys.exit(f"cannot profile: {missing}")
    page_name, clicks = ("explorer", 1) if args.quick else (args.page, args.clicks)
    label = args.label or PAGES[page_name][1]
    by_source, by_function = profile(page_name, label, clicks)
    total = sum(by_source.values())
    print(f"\n{page_name} page, click on {label!r}, {clicks} click(s) profiled at 1280×720: "
          f"{total:.0f} ms of CPU in the browser per click (idle left out)\n")
    print("| source | ms per click | share |\n|---|---:|---:|")
    for where, ms in by_source.most_common(10):
        print(f"| {where} | {ms:.1f} | {ms / total:.0%} |")
    print("\n| function · source | ms per click |\n|---|---:|")
    for name, ms in by_function.most_common(args.top):
        print(f"| {name} | {ms:.1f} |")


if __name__ == "__main__":
    main()
