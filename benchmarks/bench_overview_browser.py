"""How long until the MiniLM page's layer × head overview is drawn in a real browser.

Starts a fresh ``streamlit run app.py`` (``tests/browser_utils.streamlit_server``), opens
``/minilm?text=…`` in headless Debian Chromium and reports, in milliseconds:

* **overview drawn** — from navigation start until the overview's heatmap image is in the
  DOM. A ``MutationObserver`` installed before the page loads records the moment, so the
  figures drawn after it (the open head's four stage figures) do not delay the reading;
* **page settled** — until every chart of the page is drawn and the script run is over
  (what the learner waits for before the page stops moving);
* **title shown** — until the page's ``h1``: the app shell, the same for every page;
* for a **cold** visit (first visit with this text: MiniLM runs; the model itself is loaded
  by a warm-up visit) and as the median of **warm** visits (``st.cache_data`` hit: the
  figures are built, sent and drawn). Each visit is a new browser page and Streamlit
  session; all share one browser context, so the app's scripts (Plotly's bundle) come from
  the browser cache, as for a returning learner;
* **open a head** — median time from clicking a tile centre of the overview until the
  overview is redrawn with the frame on that tile, and until that head's stage figures are
  drawn (a full rerun: both are sent again).

Inputs: one sentence (the page adds its example of a different length), a longer
paragraph, and one at the page's 128-token limit (pooled 2 × 2 in the overview). The
overview figure's JSON size is measured in this process with the same code.

Usage::

    python benchmarks/bench_overview_browser.py            # 7 warm visits, 5 clicks per input
    python benchmarks/bench_overview_browser.py --quick    # CI: 2 warm visits, 2 clicks

Prints a markdown table.
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
# Installed before every page loads: records performance.now() the first time each registered test holds.
WATCH = """
window.__marks = {};
window.__tests = {
  chart: () => !!document.querySelector('.js-plotly-plot g.hm image'),
  overview: () => Array.from(document.querySelectorAll('.js-plotly-plot')).some(d =>
      d.layout && d.layout.meta && d.layout.meta.stage === 'overview' && d.querySelector('g.hm image')),
};
window.__watch = (name, test) => { delete window.__marks[name]; window.__tests[name] = test; };
new MutationObserver(() => {
  for (const [name, test] of Object.entries(window.__tests)) {
    if (!(name in window.__marks) && test()) window.__marks[name] = performance.now();
  }
}).observe(document, {subtree: true, childList: true, attributes: true, attributeFilter: ['href']});
"""
SETTLED = """() => { const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
    return plots.length >= 5 && plots.every(d => d.querySelector('.main-svg'))
        && !document.querySelector('[data-testid="stStatusWidget"]'); }"""
REGISTER_HEAD = """([layer, head]) => {
  const meta = d => (d.layout && d.layout.meta) || {};
  const plots = () => Array.from(document.querySelectorAll('.js-plotly-plot'));
  window.__watch('frame', () => plots().some(d => meta(d).stage === 'overview' && meta(d).highlight
      && meta(d).highlight[0] === layer && meta(d).highlight[1] === head && d.querySelector('g.hm image')));
  window.__watch('stages', () => ['scores', 'masked_scores', 'weights', 'context'].every(s => plots().some(d =>
      meta(d).stage === s && meta(d).layer === layer && meta(d).head === head && d.querySelector('g.hm image'))));
  window.__clicked = performance.now(); }"""
EXPLORER_SETTLED = """() => document.querySelector('.js-plotly-plot g.hm image')
    && !document.querySelector('[data-testid="stStatusWidget"]')"""
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


def visit(context, url: str, mark: str = "overview", settled: str = SETTLED):
    """A new page (a new Streamlit session) at ``url``: (page, title ms, ``mark`` ms, settled ms)."""
    page = context.new_page()
    page.add_init_script(WATCH)
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("h1", timeout=TIMEOUT_MS)
    title = (time.perf_counter() - start) * 1e3
    page.wait_for_function(f"() => '{mark}' in window.__marks", timeout=TIMEOUT_MS)
    page.wait_for_function(settled, timeout=TIMEOUT_MS)
    done = (time.perf_counter() - start) * 1e3
    return page, title, page.evaluate(f"window.__marks['{mark}']"), done


def open_heads(page, tiles) -> tuple[list[float], list[float]]:
    """Click each tile centre of the overview in turn: ms until its frame is drawn, and until its stages are."""
    frames, stages = [], []
    for layer, head in tiles:
        overview = page.locator(".js-plotly-plot").first
        overview.scroll_into_view_if_needed()
        box = overview.locator(".scatterlayer .point").nth(layer * 12 + head).bounding_box()
        page.evaluate(REGISTER_HEAD, [layer, head])
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_function("() => 'frame' in window.__marks && 'stages' in window.__marks", timeout=TIMEOUT_MS)
        marks = page.evaluate("[window.__marks.frame - window.__clicked, window.__marks.stages - window.__clicked]")
        frames.append(marks[0])
        stages.append(marks[1])
        page.wait_for_function(SETTLED, timeout=TIMEOUT_MS)
    return frames, stages


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

    def row(cells) -> None:
        print("| " + " | ".join(cells) + " |", flush=True)

    with streamlit_server(timeout=180) as base, browser() as chromium:
        context = chromium.new_context(viewport=VIEWPORT)
        page, _, _, warmup = visit(context, f"{base}/minilm")  # fresh server: MiniLM loaded, first-visitor rerun
        page.close()
        print(f"\nMiniLM page in headless Chromium ({runs} warm visits, {clicks} tile clicks per input; first visit "
              f"of the fresh server {warmup:.0f} ms; {os.cpu_count()} CPUs)\n")
        row(["input", "tokens n", "overview cells", "overview JSON", "cold: overview drawn", "cold: page settled",
             "warm: title shown", "warm: overview drawn", "warm: page settled", "click: frame redrawn",
             "click: head's stages drawn"])
        row(["---"] + ["---:"] * 10)
        for name, text in INPUTS.items():
            url = f"{base}/minilm?{urllib.parse.urlencode({'text': text})}"
            page, _, cold, cold_settled = visit(context, url)
            page.close()
            warm = []
            for _ in range(runs):
                page, *times = visit(context, url)
                warm.append(times)
                page.close()
            page, *_ = visit(context, url)
            frames, stages = open_heads(page, tiles)
            page.close()
            n, cells, size = figure_size(text)
            times = [cold, cold_settled, *(statistics.median(col) for col in zip(*warm)),
                     statistics.median(frames), statistics.median(stages)]
            row([name, str(n), f"{cells:,}", f"{size / 1e6:.2f} MB"] + [f"{t:.0f}" for t in times])
        # Baseline: the explorer (toy model, small heatmaps): when a new page's first Plotly chart is drawn.
        url = f"{base}/?{urllib.parse.urlencode({'text': INPUTS['one sentence']})}"
        page, *_ = visit(context, url, "chart", EXPLORER_SETTLED)
        page.close()
        base_runs = []
        for _ in range(runs):
            page, *times = visit(context, url, "chart", EXPLORER_SETTLED)
            base_runs.append(times)
            page.close()
        title, chart, settled = (statistics.median(col) for col in zip(*base_runs))
        row(["baseline: Explorer page, its first heatmap", "", "", "", "", "", f"{title:.0f}", f"{chart:.0f}",
             f"{settled:.0f}", "", ""])
        context.close()

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nMilliseconds; warm and click columns are medians. Cold = first visit with this text (MiniLM runs), "
          f"warm = st.cache_data hit; both from navigation start. Click columns from the click. The baseline row "
          f"is the Explorer's first chart (toy model): the fixed cost of a new page's first Plotly chart. "
          f"Load average at the end: {load:.2f}.")


if __name__ == "__main__":
    main()
