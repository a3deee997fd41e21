"""Click to drawn: what a student waits for after an interaction, in headless Chromium, and what it costs the server.

    python benchmarks/bench_explorer.py            # medians of 5
    python benchmarks/bench_explorer.py --quick    # CI: one repeat of the first interaction, default text, no warm-up

For each interaction, in one session of a fresh ``streamlit run app.py``:

* **click → drawn**: from the click (or Control+Enter) until the script run is over and every
  chart on the page is drawn and quiet (``bench_bertviz.measure_change``: the frame after the last
  change inside any chart; the quiet wait is not counted);
* **bytes**: websocket payload the browser received for that rerun (before compression: Playwright
  sees the decompressed frames), i.e. what Streamlit sent. "First time" is a state the session has
  not seen; repeated states (toggling back) cost less, as Streamlit sends a reference to a message
  the browser already holds instead of the message;
* **charts**: Plotly charts on the page afterwards.

And in process (AppTest), the server's CPU time of one rerun of the explorer with the same settings,
with the trace cached (figures rebuilt) and cold (trace computed).
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
from browser_utils import browser, chromium_missing, streamlit_server  # noqa: E402
from cli_args import positive  # noqa: E402  (benchmarks/, beside this script)

TWELVE = "The animal didn't cross the street because it was too tired."
LONG = " ".join(f"w{i}" for i in range(128))
MINILM_512 = " ".join(f"word{i % 97}" for i in range(700))  # cut to MiniLM's 512 tokens


def sidebar_toggle(label: str):
    return lambda page: page.get_by_test_id("stSidebarUserContent").get_by_text(label, exact=True).click()


def click_marker(stage: str, index: int):
    """Click the centre of the ``index``-th transparent marker of the chart whose meta.stage is ``stage``."""
    def click(page):
        x, y = page.evaluate("""([stage, i]) => {
            const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
                .find(d => d.layout && d.layout.meta && d.layout.meta.stage === stage);
            const r = d.querySelectorAll('.scatterlayer .point')[i].getBoundingClientRect();
            return [r.left + r.width / 2, r.top + r.height / 2]; }""", [stage, index])
        page.mouse.click(x, y)
    return click


def type_text(text: str):
    def change(page):
        box = page.get_by_role("textbox", name="Sentences (one per line)", exact=True)
        box.fill(text)
        box.press("Control+Enter")
    return change


# (name, path, query, change(repeat) → callable); toggles alternate on/off between repeats
INTERACTIONS = [
    ("explorer, default text: toggle causal", "/", {}, lambda r: sidebar_toggle("Causal mask")),
    ("explorer, 128 tokens × 12 heads: toggle causal", "/", {"text": LONG, "d_model": 96, "n_heads": 12},
     lambda r: sidebar_toggle("Causal mask")),
    ("explorer, 12 tokens: click a head's tile", "/", {"text": TWELVE}, lambda r: click_marker("heads", 1 + r % 7)),
    ("explorer, 12 tokens: type a new sentence", "/", {"text": TWELVE},
     lambda r: type_text(f"{TWELVE} Then it slept {r}.")),
    ("MiniLM, 12 tokens: click an overview tile", "/minilm", {"text": TWELVE},
     lambda r: click_marker("overview", 13 + 5 * r)),
    ("MiniLM: type a new 16-token sentence", "/minilm", {"text": TWELVE},
     lambda r: type_text(f"The old fisherman finally sat down to rest after a long day number {r}.")),
    ("MiniLM: type a new 512-token text", "/minilm", {"text": TWELVE},
     lambda r: type_text(f"{r} {MINILM_512}")),
]


def server_cpu(query: dict, repeats: int, warm_up: bool = True) -> tuple[float, float, int]:
    """(cold, warm) CPU seconds of one explorer rerun in process, and the figures' bytes; without ``warm_up`` the
    first cold run also pays the imports (torch, plotly, the app)."""
    import streamlit as st
    from apptest_utils import new_app

    if warm_up:
        new_app(**query).run()  # imports torch, plotly, the app
    cold, warm, payload = [], [], 0
    for _ in range(repeats):
        st.cache_data.clear()
        at = new_app(**query)
        start = time.process_time()
        at.run()
        cold.append(time.process_time() - start)
        start = time.process_time()
        at.run()
        warm.append(time.process_time() - start)
        payload = sum(len(c.proto.spec) for c in at.get("plotly_chart"))
    return statistics.median(cold), statistics.median(warm), payload


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI (checks that it runs): one repeat of the first "
                                                             "interaction, the default text only, no warm-up run")
    parser.add_argument("--repeats", type=positive, default=5)
    parser.add_argument("--only", default="", help="run only the interactions whose name contains this text")
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    cases = INTERACTIONS[:1] if args.quick else [i for i in INTERACTIONS if args.only in i[0]]
    if not cases:
        parser.error(f"--only {args.only!r} matches no interaction; there are: " + "; ".join(i[0] for i in INTERACTIONS))
    print(f"# Click to drawn — median of {repeats}; load average at start {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores\n")
    print("| settings | server CPU per rerun, trace cached (s) | … trace computed (s) | figure bytes |")
    print("|---|---:|---:|---:|")
    for name, query in (("explorer, default text", {}), ("explorer, 128 tokens × 12 heads", INTERACTIONS[1][2]))[
            :0 if args.only else 1 if args.quick else 2]:
        cold, warm, payload = server_cpu(query, repeats, warm_up=not args.quick)
        print(f"| {name} | {warm:.3f} | {cold:.3f} | {payload / 1e6:.2f} MB |")
    print()
    if (missing := chromium_missing()):
        print(f"| browser | skipped: {missing} |")
        return 0
    rows = []
    with streamlit_server() as url, browser() as chromium:
        for name, path, query, change in cases:
            page = chromium.new_page(viewport={"width": 1280, "height": 720})
            received = []
            page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: received.append(
                len(payload) if isinstance(payload, (bytes, str)) else 0)))
            measure_page(page, f"{url}{path}?{urllib.parse.urlencode(query)}")
            received.clear()
            first, _ = measure_change(page, change=change(-1))  # a state this session has not seen yet
            first_bytes = sum(received)
            times, sizes, charts = [], [], 0
            for r in range(repeats):
                received.clear()
                seconds, charts = measure_change(page, change=change(r))
                times.append(seconds)
                sizes.append(sum(received))
            rows.append((name, first, first_bytes, statistics.median(times), max(times), statistics.median(sizes),
                         charts))
            page.close()
    print("| interaction (1280×720) | first time: click → drawn (s) | bytes | repeated: median (s) | max (s) | "
          "bytes | charts |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, first, first_bytes, median, worst, size, charts in rows:
        print(f"| {name} | {first:.2f} | {first_bytes / 1e6:.2f} MB | {median:.2f} | {worst:.2f} | "
              f"{size / 1e6:.2f} MB | {charts} |")
    print(f"\nload average at end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
