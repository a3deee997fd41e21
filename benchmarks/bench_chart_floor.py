"""The floor of a link's first visit: the smallest Streamlit page with one 12-token heatmap, drawn three ways.

    python benchmarks/bench_chart_floor.py             # medians of 5 visits per variant
    python benchmarks/bench_chart_floor.py --quick     # CI: one visit each

The goal is the first heatmap of a visit in ≤ 2.0 s. Our explorer draws it in ~3.1–3.5 s on this
machine (``bench_visit.py``). This measures what no page of ours can beat, on a page holding nothing but a
title and the explorer's focused heatmap of the weights (12 tokens, the same figure the explorer draws):

* **st.plotly_chart**: Streamlit's own chart element; its 4.7 MB Plotly chunk is fetched and evaluated
  when the chart's message arrives;
* **component + plotly.js (full)**: a ``st.components.v2`` component drawing the same figure with npm's
  ``plotly.js-dist-min`` (the whole library, as Streamlit's chunk holds it);
* **component + plotly.js (cartesian)**: the same with ``plotly.js-cartesian-dist-min``, the partial build
  with only the 2-D traces (heatmap, scatter, bar: all our figures use).

Each visit is a fresh browser context against a warm server; the time is from navigation start to the
first ``g.hm image`` (heatmap cells drawn), as in ``bench_visit.py``. The two bundles come from the npm
registry once (``npm pack``, version of Streamlit's own Plotly) into ``artifacts/chart_floor/`` (git-ignored).
The components draw without Streamlit's theme, modebar settings or click events: a floor, not a product.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_clicks import server_at  # noqa: E402
from bench_visit import FIRST_HEATMAP, TWELVE  # noqa: E402
from browser_utils import browser, chromium_missing  # noqa: E402
from cli_args import positive  # noqa: E402  (benchmarks/, beside this script)

PLOTLY_JS = "4.1.1"  # the plotly.js major version inside Streamlit 1.67's PlotlyChart chunk, and plotly.py 7.1's
BUNDLES = {  # name → (npm package, file in its tarball, SHA-256 of that file at PLOTLY_JS)
    "full": ("plotly.js-dist-min", "package/plotly.min.js",
             "3b6e15d45dbb7fca5bd2094291e961ddc5472cd887009e6009a56dab668d721f"),
    "cartesian": ("plotly.js-cartesian-dist-min", "package/plotly-cartesian.min.js",
                  "79542150855a52c567260e3137095dbe2b744e6d702a5cabe67da246942fba7a"),
}
CACHE = ROOT / "artifacts" / "chart_floor"  # /artifacts/ is git-ignored
VARIANTS = ("st.plotly_chart", "component + plotly.js (full)", "component + plotly.js (cartesian)")

APP = '''
import json
from pathlib import Path
import streamlit as st

figure = json.loads(Path(__file__).with_name("figure.json").read_text())
bundle = st.query_params.get("bundle", "")
st.title("Attention weights")
if not bundle:
    st.plotly_chart(figure, key="hm")
else:  # one <script> per page, shared by every instance; the component draws once it has loaded
    draw = st.components.v2.component("floor_heatmap", isolate_styles=False,
                                      html='<div class="hm-host" style="width:100%"></div>', js="""
export default function ({data, parentElement}) {
  const host = parentElement.querySelector(".hm-host");
  const draw = () => window.Plotly.react(host, data.figure.data, data.figure.layout, {displaylogo: false});
  if (!window.__floorPlotly) {
    window.__floorPlotly = new Promise(done => {
      const s = document.createElement("script");
      s.src = "./app/static/" + data.bundle + ".js";
      s.onload = done;
      document.head.appendChild(s);
    });
  }
  window.__floorPlotly.then(draw);
}""")
    draw(data={"figure": figure, "bundle": bundle}, key="hm")
'''


class FetchError(Exception):
    """A bundle could not be fetched from npm, or is not the file it should be (one line to print)."""


def fetch_bundles(cache: Path = CACHE) -> Path:
    """plotly.js, whole and cartesian, from the npm registry into ``cache/static``, once; each file's SHA-256 is
    checked, so a damaged cached copy is fetched again. Raises FetchError (npm failed, or the bytes differ)."""
    static = cache / "static"
    static.mkdir(parents=True, exist_ok=True)
    for name, (package, member, sha256) in BUNDLES.items():
        path = static / f"{name}.js"
        if path.exists() and hashlib.sha256(path.read_bytes()).hexdigest() == sha256:
            continue
        spec = f"{package}@{PLOTLY_JS}"
        with tempfile.TemporaryDirectory() as tmp:
            try:
                subprocess.run(["npm", "pack", spec, "--loglevel=error"], cwd=tmp, check=True, capture_output=True,
                               text=True, timeout=300)
                tarball, = Path(tmp).glob("*.tgz")
                with tarfile.open(tarball) as tar:
                    data = tar.extractfile(member).read()
            except subprocess.CalledProcessError as err:
                said = [line for line in (err.stderr or "").splitlines() if line.strip()
                        and "complete log" not in line][:2] or [f"npm pack exited {err.returncode}"]
                raise FetchError(f"cannot fetch {spec} from npm: {'; '.join(said)}") from None
            except (subprocess.TimeoutExpired, OSError, ValueError, KeyError, tarfile.TarError) as err:
                raise FetchError(f"cannot fetch {spec} from npm: {err}") from None
        if hashlib.sha256(data).hexdigest() != sha256:
            raise FetchError(f"{spec}: {member} is not the file this benchmark was written for (SHA-256 differs)")
        (static / f"{name}.js.part").write_bytes(data)
        (static / f"{name}.js.part").rename(path)
    return static


def focused_figure() -> dict:
    """The explorer's focused heatmap of head 0's weights for the 12-token sentence, as Plotly JSON."""
    from transformer_core import EncoderConfig, run_toy
    from transformer_core.figures.stage import stage_figure

    trace = run_toy([TWELVE], EncoderConfig(d_model=64, n_heads=8, d_ff=256, seed=0))  # the explorer's defaults
    return json.loads(stage_figure(trace, "weights", head=0).to_json())


def write_app(where: Path) -> None:
    (where / ".streamlit").mkdir(parents=True, exist_ok=True)
    (where / ".streamlit" / "config.toml").write_text(
        "[server]\nenableStaticServing = true\nheadless = true\n[browser]\ngatherUsageStats = false\n")
    (where / "app.py").write_text(APP)
    (where / "figure.json").write_text(json.dumps(focused_figure()))
    shutil.copytree(fetch_bundles(), where / "static", dirs_exist_ok=True)


def missing() -> str | None:
    if (reason := chromium_missing()):
        return reason
    if not all((CACHE / "static" / f"{n}.js").exists() for n in BUNDLES) and not shutil.which("npm"):
        return f"npm is missing (apt-get install -y npm) and {CACHE / 'static'} does not hold plotly.js yet"
    return None


def visits(url: str, repeats: int, times: dict[str, list[float]]) -> bool:
    """``repeats`` + 1 fresh-context visits per variant, interleaved (so load drifts hit every variant), the first
    not counted (it warms the server); each first-heatmap time appended to ``times``. False if one drew nothing."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    queries = dict(zip(VARIANTS, ("", "?bundle=full", "?bundle=cartesian")))
    with browser() as b:
        for r in range(repeats + 1):
            for variant, query in queries.items():
                ctx = b.new_context(viewport={"width": 1280, "height": 720})
                try:
                    page = ctx.new_page()
                    page.add_init_script(f"({FIRST_HEATMAP})()")
                    page.goto(url + "/" + query)
                    try:
                        page.wait_for_function("window.__firstHeatmap !== null", timeout=60_000)
                    except PlaywrightTimeout:
                        print(f"bench_chart_floor: {variant}: no heatmap drawn in 60 s", file=sys.stderr)
                        return False
                    if r:
                        times[variant].append(page.evaluate("window.__firstHeatmap") / 1e3)
                finally:
                    ctx.close()
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=positive, default=5)
    parser.add_argument("--quick", action="store_true", help="one visit per variant (CI)")
    args = parser.parse_args()
    if (reason := missing()):
        print(f"bench_chart_floor: cannot run: {reason}", file=sys.stderr)
        return 1
    repeats = 1 if args.quick else args.repeats
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            write_app(Path(tmp))
        except FetchError as err:
            print(f"bench_chart_floor: {err}", file=sys.stderr)
            return 1
        try:
            with server_at(Path(tmp)) as url:  # bench_clicks': streamlit run app.py in that folder, healthy
                if not visits(url, repeats, times):
                    return 1
        except RuntimeError:
            print("bench_chart_floor: the Streamlit server did not start", file=sys.stderr)
            return 1
    base = statistics.median(times[VARIANTS[0]])
    floor = None
    if not args.quick:  # page a in this run: the bare HTML page the speed goals are ratios of (bench_visit.py)
        from bench_visit import bare_page, bare_visit

        with browser() as b, bare_page() as bare:
            bare_visit(b, bare)  # warm
            floor = statistics.median(bare_visit(b, bare)["first"] for _ in range(repeats))
    print(f"\nfirst heatmap of a one-chart page, fresh browser context, 1280×720, median of {repeats}"
          + (f"; × page a: over the bare page's first visit in this run, {floor:.2f} s" if floor else "") + "\n")
    print("| variant | first heatmap (s) | vs st.plotly_chart | × page a |")
    print("|---|---:|---:|---:|")
    for variant in VARIANTS:
        median = statistics.median(times[variant])
        print(f"| {variant} | {median:.2f} | {median - base:+.2f} s | {f'{median / floor:.2f}' if floor else '–'} |")
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
