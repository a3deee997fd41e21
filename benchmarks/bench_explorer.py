"""Explorer page cost for a typical and a large interaction: server time, payload, time to draw.

    python benchmarks/bench_explorer.py            # full run (medians of 7)
    python benchmarks/bench_explorer.py --quick    # CI: checks it runs (one repeat)

* server time per rerun: an in-process AppTest run of the page (cold = trace cache cleared, so
  the model runs; warm = trace cached, figures rebuilt, as after toggling an unrelated widget);
* payload: bytes of every Plotly figure the page sends (before websocket compression);
* time to draw: a fresh headless-Chromium page on a real `streamlit run` server, from
  navigation until every heatmap of the four stages is drawn.
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
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from apptest_utils import new_app  # noqa: E402
from browser_utils import browser, chromium_missing, streamlit_server, wait_for_heatmaps  # noqa: E402

CASES = {
    "typical: 12 tokens, d_model 64, 8 heads": dict(
        text="The quick brown fox jumps over the lazy dog near the river bank", d_model="64", n_heads="8"),
    "large: 128 tokens, d_model 384, 12 heads": dict(
        text=" ".join(f"w{i % 50}" for i in range(128)), d_model="384", n_heads="12"),
}
STAGES_PER_PAGE = 4  # scores, masked scores, weights, context


def server_side(query: dict, repeats: int) -> dict:
    import streamlit as st

    cold, warm, payload = [], [], 0
    new_app(**query).run()  # warm-up: imports torch, plotly, the app modules
    st.cache_data.clear()
    for _ in range(repeats):
        at = new_app(**query)
        start = time.perf_counter()
        at.run()
        cold.append(time.perf_counter() - start)
        assert not at.exception, at.exception
        start = time.perf_counter()
        at.run()
        warm.append(time.perf_counter() - start)
        payload = sum(len(c.proto.spec) for c in at.get("plotly_chart"))
        st.cache_data.clear()
    return {"cold": statistics.median(cold), "warm": statistics.median(warm), "payload": payload}


def browser_side(url: str, query: dict, repeats: int) -> float:
    heatmaps = int(query["n_heads"]) * STAGES_PER_PAGE
    times = []
    with browser() as b:
        for i in range(repeats + 1):
            page = b.new_page(viewport={"width": 1400, "height": 1000})
            start = time.perf_counter()
            page.goto(f"{url}/?{urllib.parse.urlencode(query)}")
            wait_for_heatmaps(page, heatmaps, timeout_ms=300_000)
            if i:  # the first visit warms the server's caches and imports
                times.append(time.perf_counter() - start)
            page.close()
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats: only checks the script runs")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    print(f"# Explorer benchmark — median of {repeats}; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores\n")
    rows = []
    missing = chromium_missing()
    for name, query in CASES.items():
        query = dict(query, causal="1", padding="1", seed="0")
        server = server_side(query, repeats)
        if missing:
            drawn = None
        else:
            with streamlit_server() as url:
                drawn = browser_side(url, query, repeats)
        rows.append((name, server, drawn))
    print("| interaction | server rerun, cold (s) | server rerun, warm (s) | figure payload (MB) | "
          "time to draw all heatmaps in Chromium (s) |")
    print("|---|---:|---:|---:|---:|")
    for name, server, drawn in rows:
        drawn_text = f"{drawn:.2f}" if drawn is not None else f"skipped: {missing}"
        print(f"| {name} | {server['cold']:.3f} | {server['warm']:.3f} | {server['payload'] / 1e6:.2f} | {drawn_text} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
