"""What attention moves: click → drawn for each new MiniLM view, and the cost of attention flow by sentence length.

    python benchmarks/bench_moves.py            # medians of 5
    python benchmarks/bench_moves.py --quick    # CI: one repeat, flow at 8 tokens, one interaction

In one session of a fresh ``streamlit run app.py`` (headless Chromium, 1280×720), for each view the
learner clicks into it from the default page (``bench_bertviz.measure_change``: until the run is over
and every chart is drawn and quiet), then back out (not timed). "First time" is the first visit of
that state (MiniLM run for every layer's weights and values, the analysis, the figure); "repeated"
toggles back into a state computed before (cached: only the figure is sent and drawn).

In process: :func:`transformer_core.analysis.rollout.attention_flow` on MiniLM's head-averaged weights of
sentences of n tokens ([CLS] and [SEP] included), median of repeats, beside rollout; this sets
``FLOW_TOKEN_LIMIT``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_bertviz import measure_change, measure_page  # noqa: E402
from browser_utils import browser, chromium_missing, streamlit_server, wait_idle  # noqa: E402
from cli_args import positive  # noqa: E402  (benchmarks/, beside this script)

TWELVE = "The animal didn't cross the street because it was too tired."
WORDS = ("the old fisherman finally sat down to rest after a long day at the busy harbour near the town where "
         "his family had lived for many years").split()


def button(text: str):
    return lambda page: page.get_by_test_id("stButtonGroup").get_by_text(text, exact=True).first.click()


def pick(label: str, option: str):
    def change(page):  # type to filter: a long option list is virtualised (options off screen do not exist)
        page.get_by_test_id("stSelectbox").filter(has_text=label).first.click()
        page.keyboard.type(option)
        page.get_by_role("option", name=option, exact=True).click()
    return change


# (name, into the view, back out)
INTERACTIONS = [
    ("stage: weights → norms", button("norms"), button("weights")),
    ("across layers: off → rollout", button("rollout"), button("off")),
    ("across layers: off → flow", button("flow"), button("off")),
    ("colour heads: none → previous-token", pick("Colour heads by type", "previous-token"),
     pick("Colour heads by type", "none")),
]
# The token-pair search draws a table, not a chart, so measure_change (which waits for a chart) cannot time it.


def flow_times(lengths: list[int], repeats: int) -> list[tuple[int, float, float]]:
    """(n tokens, median seconds of flow, of rollout) on MiniLM's weights."""
    from transformer_core.analysis.rollout import attention_flow, attention_rollout, layer_means
    from transformer_core.models.minilm_trace import run_minilm

    rows = []
    for n in lengths:
        trace = run_minilm([" ".join(WORDS[:n - 2])], only=lambda name: name.endswith(".weights"))
        means = layer_means(trace, 0)
        assert means.shape[-1] == n, (n, means.shape)
        flow, roll = [], []
        for _ in range(repeats):
            start = time.perf_counter()
            attention_flow(means, limit=None)
            flow.append(time.perf_counter() - start)
            start = time.perf_counter()
            attention_rollout(means)
            roll.append(time.perf_counter() - start)
        rows.append((n, statistics.median(flow), statistics.median(roll)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI (checks that it runs): one repeat, flow at 8 "
                                                             "tokens, one interaction")
    parser.add_argument("--repeats", type=positive, default=5)
    parser.add_argument("--no-flow", action="store_true", help="skip the in-process flow timings")
    parser.add_argument("--only", default="", help="run only the interactions whose name contains this text")
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    cases = INTERACTIONS[:1] if args.quick else [i for i in INTERACTIONS if args.only in i[0]]
    if not cases:  # before any work: the flow timings alone take minutes
        parser.error(f"--only {args.only!r} matches no interaction; there are: " + "; ".join(i[0] for i in INTERACTIONS))
    print(f"# What attention moves — median of {repeats}; load average at start {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores\n")
    print("| tokens | attention flow (s) | rollout (ms) |")
    print("|---:|---:|---:|")
    for n, flow, roll in [] if args.no_flow else flow_times([8] if args.quick else [8, 12, 16, 20],
                                                              min(repeats, 3)):
        print(f"| {n} | {flow:.2f} | {roll * 1e3:.2f} |")
    print()
    if (missing := chromium_missing()):
        print(f"| browser | skipped: {missing} |")
        return 0
    rows = []
    with streamlit_server() as url, browser() as chromium:
        for name, into, back in cases:
            page = chromium.new_page(viewport={"width": 1280, "height": 720})
            measure_page(page, f"{url}/minilm?{urllib.parse.urlencode({'text': TWELVE})}")
            page.wait_for_timeout(3000)  # a late rerun of the first visit would swallow the first click
            wait_idle(page)
            first, charts = measure_change(page, change=into)
            times = []
            for _ in range(repeats):
                back(page)  # not timed: a rerun that changes no chart may never look "started" to measure_change
                page.wait_for_timeout(1500)
                wait_idle(page)
                seconds, charts = measure_change(page, change=into)
                times.append(seconds)
            rows.append((name, first, statistics.median(times), max(times), charts))
            print(f"  {name}: first {first:.2f} s, repeated {times}", file=sys.stderr)
            page.close()
    print("| MiniLM, 15 tokens (1280×720): click | first time (s) | repeated: median (s) | max (s) | charts |")
    print("|---|---:|---:|---:|---:|")
    for name, first, median, worst, charts in rows:
        print(f"| {name} | {first:.2f} | {median:.2f} | {worst:.2f} | {charts} |")
    print(f"\nload average at end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
