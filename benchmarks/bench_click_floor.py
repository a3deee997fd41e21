"""The floor of a click: the smallest Streamlit pages that answer a toggle, timed as bench_clicks.py times ours.

    python benchmarks/bench_click_floor.py            # medians of 7 clicks per page
    python benchmarks/bench_click_floor.py --quick    # CI: one click each

The goal is every click in ≤ 0.2 × page a (a bare HTML page drawing one 12×12 heatmap, ~0.6 s here: about
0.12 s). This measures what no page of ours can beat, from a temporary folder (its ``static`` links to ours):

* **text**: one ``st.toggle`` whose click reruns the script and changes one line of text (Streamlit's own rerun);
* **one heatmap**: the same, and the click also redraws the explorer's focused 12-token heatmap with our Plotly
  element (``ui.shell.chart.chart``), the figure built once and cached;
* **one heatmap, fragment**: the same inside ``st.fragment`` (how our pages' clicks rerun their part).

Click → drawn is bench_clicks.py's (the same watcher and settle rule, 0.75 s of quiet not counted), page a is
bench_visit.py's, both in this run. The text page is the floor of any click that reruns a script.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_clicks import open_page, server_at, timed, toggle  # noqa: E402
from browser_utils import browser, chromium_missing  # noqa: E402
from cli_args import positive  # noqa: E402

APP = '''
import sys
sys.path.insert(0, {root!r})
import streamlit as st
from ui.shell.chart import chart

@st.cache_resource
def figure(on: bool):
    import json
    from transformer_core import EncoderConfig, run_toy
    from transformer_core.figures.stage import stage_figure
    trace = run_toy([{text!r}], EncoderConfig(d_model=64, n_heads=8, d_ff=256, seed=0))
    return json.loads(stage_figure(trace, "weights", head=1 if on else 0).to_json())

def body():
    on = st.toggle("Switch", key="switch")
    st.write("on" if on else "off")
    if st.query_params.get("page") != "text":
        chart(figure(on), key="hm")

st.title("Floor")
(st.fragment(body) if st.query_params.get("page") == "fragment" else body)()
'''
PAGES = {"text": "a toggle and one line of text", "chart": "one heatmap (our element)",
         "fragment": "one heatmap, fragment"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=positive, default=7)
    parser.add_argument("--quick", action="store_true", help="one click per page (CI)")
    args = parser.parse_args()
    if (missing := chromium_missing()):
        print(f"bench_click_floor: cannot run: {missing}", file=sys.stderr)
        return 1
    if not (ROOT / "static" / "plotly").is_dir():
        print("bench_click_floor: cannot run: static/plotly is missing (python scripts/fetch_plotly.py)",
              file=sys.stderr)
        return 1
    from bench_visit import TWELVE, bare_page, bare_visit

    repeats = 1 if args.quick else args.repeats
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rows = []
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        where = Path(tmp)
        (where / ".streamlit").mkdir()
        (where / ".streamlit" / "config.toml").write_text((ROOT / ".streamlit" / "config.toml").read_text())
        (where / "static").symlink_to(ROOT / "static", target_is_directory=True)
        (where / "app.py").write_text(APP.format(root=str(ROOT), text=TWELVE))
        url = stack.enter_context(server_at(where))
        b = stack.enter_context(browser())
        floor = None
        if not args.quick:
            bare = stack.enter_context(bare_page())
            bare_visit(b, bare)  # warm
            floor = statistics.median(bare_visit(b, bare)["first"] for _ in range(5))
        act = toggle("Switch")
        for name, label in PAGES.items():
            page = b.new_page(viewport={"width": 1280, "height": 720})
            open_page(page, f"{url}/?page={name}")
            timed(page, act(0))  # the first click: the figure of the other value is built and cached
            times, runs = [], []
            for r in range(1, repeats + 1):
                times.append(timed(page, act(r)))
                runs.append(page.run_over)
            rows.append((label, statistics.median(times), max(times), statistics.median(runs)))
            page.close()
    print(f"\nclick → drawn, 1280×720, median of {repeats}"
          + (f"; × bare: over page a's first visit in this run, {floor:.2f} s" if floor else "") + "\n")
    print("| page | median (s) | × bare | max (s) | run over, median (s) |")
    print("|---|---:|---:|---:|---:|")
    for label, median, worst, run_over in rows:
        ratio = f"{median / floor:.2f}" if floor else "–"
        print(f"| {label} | {median:.2f} | {ratio} | {worst:.2f} | {run_over:.2f} |")
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
