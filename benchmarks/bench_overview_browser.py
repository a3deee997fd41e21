"""How long until the MiniLM page's layer × head overview is drawn in a real browser.

Starts a fresh ``streamlit run app.py`` (``tests/browser_utils.streamlit_server``), opens
``/minilm?text=…`` in headless Debian Chromium and times, from ``page.goto`` until the
overview's heatmap image is in the DOM:

* **cold** — first visit with this text: MiniLM runs (the model itself is already loaded
  by a warm-up visit), nothing cached;
* **warm** — median of further visits, each a new browser page and a new session
  (``st.cache_data`` hit: only the figures are built, sent and drawn), with the time until
  the page's title shows for comparison (the app shell, the same for every page);
* **open a head** — median time from clicking a tile centre of the overview until the
  stage figures show that layer and head (a rerun, the overview redrawn with its frame).

Inputs: one sentence (the page adds its example of a different length), a longer
paragraph, and one at the page's 128-token limit. The figure's JSON size is measured
separately in this process with the same code (``transformer_core.overview``).

Usage::

    python benchmarks/bench_overview_browser.py            # 7 warm visits, 5 clicks per input
    python benchmarks/bench_overview_browser.py --quick    # CI: 2 warm visits, 2 clicks

All visits share one browser context (the app's scripts come from the browser cache, as\nfor a returning learner). Prints a markdown table (milliseconds).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from browser_utils import browser, chromium_missing, streamlit_server  # noqa: E402

WORDS = ("attention lets every token look at every other token of the sentence weigh how relevant each one is "
         "and mix their values into a new vector").split()
INPUTS = {  # name → text of the sidebar (one sentence per line)
    "one sentence": "The cat sat on the mat.",
    "paragraph": " ".join(WORDS * 2),
    "128-token limit": " ".join(WORDS * 6),
}
OVERVIEW_DRAWN = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).some(d =>
    d.layout && d.layout.meta && d.layout.meta.stage === 'overview' && d.querySelector('g.hm image'))"""
HEAD_OPEN = """([layer, head]) => {
    const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
    const w = plots.some(d => d.layout && d.layout.meta && d.layout.meta.stage === 'weights'
                               && d.layout.meta.layer === layer && d.layout.meta.head === head);
    const o = plots.some(d => d.layout && d.layout.meta && d.layout.meta.stage === 'overview'
                               && d.layout.meta.highlight && d.layout.meta.highlight[0] === layer
                               && d.layout.meta.highlight[1] === head && d.querySelector('g.hm image'));
    return w && o; }"""
TIMEOUT_MS = 300_000
VIEWPORT = {"width": 1400, "height": 1000}


def figure_size(text: str) -> tuple[int, int, int]:
    """(tokens n of sentence 0, heatmap cells, overview figure JSON bytes) for this input."""
    from transformer_core.overview import overview_figure
    from transformer_core.pretrained_trace import run_minilm
    from ui.minilm import with_example
    from ui.state import MAX_TOKENS, split_sentences

    sentences, _ = with_example(split_sentences(text)[0])
    trace = run_minilm(list(sentences), max_tokens=MAX_TOKENS)
    fig = overview_figure(trace, 0, highlight=(0, 0))
    return len(trace.tokens[0]), int(fig.data[0].z.size), len(fig.to_json())


def visit(context, url: str):
    """A new page (a new Streamlit session) at ``url``; returns (page, seconds until the page's
    title is shown, seconds until the overview is drawn)."""
    page = context.new_page()
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("h1", timeout=TIMEOUT_MS)
    shell = time.perf_counter() - start
    page.wait_for_function(OVERVIEW_DRAWN, timeout=TIMEOUT_MS)
    return page, shell, time.perf_counter() - start


def open_heads(page, tiles) -> list[float]:
    """Click each tile centre of the overview in turn; seconds until that head is shown."""
    times = []
    for layer, head in tiles:
        overview = page.locator(".js-plotly-plot").first
        overview.scroll_into_view_if_needed()
        marker = overview.locator(".scatterlayer .point").nth(layer * 12 + head)
        box = marker.bounding_box()
        start = time.perf_counter()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_function(HEAD_OPEN, arg=[layer, head], timeout=TIMEOUT_MS)
        times.append(time.perf_counter() - start)
        page.wait_for_timeout(300)
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs (for CI)")
    parser.add_argument("--runs", type=int, default=None, help="warm visits per input")
    args = parser.parse_args(argv)
    if (missing := chromium_missing()):
        sys.exit(f"cannot run: {missing}")
    runs = args.runs or (2 if args.quick else 7)
    clicks = 2 if args.quick else 5
    tiles = [(1, 2), (3, 7), (5, 11), (0, 5), (4, 0)][:clicks]

    rows = []
    with streamlit_server(timeout=180) as base, browser() as chromium:
        # One browser context: like a learner's browser, the app's scripts (Plotly's bundle) come from its cache.
        context = chromium.new_context(viewport=VIEWPORT)
        page, _, warmup = visit(context, f"{base}/minilm")  # fresh server: MiniLM loaded, first-visitor rerun
        page.close()
        for name, text in INPUTS.items():
            url = f"{base}/minilm?{urllib.parse.urlencode({'text': text})}"
            page, _, cold = visit(context, url)
            page.close()
            shells, warm = [], []
            for _ in range(runs):
                page, shell, seconds = visit(context, url)
                shells.append(shell)
                warm.append(seconds)
                page.close()
            page, _, _ = visit(context, url)
            opened = open_heads(page, tiles)
            page.close()
            n, cells, size = figure_size(text)
            rows.append((name, n, cells, size, cold, statistics.median(shells), statistics.median(warm),
                         statistics.median(opened)))
        context.close()

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nMiniLM overview in headless Chromium ({runs} warm visits, {clicks} clicks per input; "
          f"first visit of the fresh server {warmup * 1e3:.0f} ms; load average {load:.2f}, {os.cpu_count()} CPUs)\n")
    print("| input | tokens n | heatmap cells | figure JSON | cold visit: overview drawn | warm visit: title shown "
          "| warm visit: overview drawn | open a head (click → drawn) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, n, cells, size, cold, shell, warm, opened in rows:
        print(f"| {name} | {n} | {cells:,} | {size / 1e6:.2f} MB | {cold * 1e3:.0f} | {shell * 1e3:.0f} "
              f"| {warm * 1e3:.0f} | {opened * 1e3:.0f} |")
    print("\nMilliseconds; warm and click columns are medians. A visit is a new browser page and Streamlit "
          "session; cold = first visit with this text (MiniLM runs), warm = st.cache_data hit.")


if __name__ == "__main__":
    main()
