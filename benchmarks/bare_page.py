"""Page a of issue 37: a bare HTML page loading plotly.js and drawing the explorer's 12×12 heatmap, the unit of its
speed goals (a first visit in ≤ 1.0 × this page, every click in ≤ 0.2 ×).

``bare_page()`` serves it from a temporary folder on a loopback port (Python's own ``http.server``, no cache
headers, as a first visit) with the plotly.js our element loads (``static/plotly/``, fetched at install), so the
ratios compare a page of ours against the same library drawing the same figure with nothing else around it.
``first_heatmap(b, url)`` times one visit in a fresh browser context: navigation start → the first ``g.hm image``
(the heatmap's cells drawn), in seconds, as ``bench_visit.py`` times our pages.
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import json
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

BUNDLE = ROOT / "static" / "plotly" / "plotly-cartesian-4.1.1.min.js"
TWELVE = "The animal didn't cross the street because it was too tired."
FIRST_HEATMAP = """() => { window.__firstHeatmap = null;
  new MutationObserver((_, obs) => {
    if (document.querySelector('g.hm image')) { window.__firstHeatmap = performance.now(); obs.disconnect(); }
  }).observe(document, {childList: true, subtree: true}); }"""
HTML = """<!doctype html><html><head><meta charset="utf-8"><title>page a</title>
<script src="plotly.js"></script></head><body><div id="chart"></div>
<script>const figure = __FIGURE__; Plotly.newPlot("chart", figure.data, figure.layout, {displaylogo: false});</script>
</body></html>"""


def focused_figure() -> dict:
    """The explorer's focused heatmap of head 0's weights for the 12-token sentence (its defaults), as JSON."""
    from transformer_core import EncoderConfig, run_toy
    from transformer_core.figures.stage import stage_figure

    trace = run_toy([TWELVE], EncoderConfig(d_model=64, n_heads=8, d_ff=256, seed=0))
    return json.loads(stage_figure(trace, "weights", head=0).to_json())


def missing() -> str | None:
    """Why page a cannot be served (plotly.js not fetched), or None."""
    return None if BUNDLE.is_file() else f"{BUNDLE} is missing (python scripts/fetch_plotly.py)"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # noqa: D102 (no line per request)
        pass


@contextlib.contextmanager
def bare_page() -> Iterator[str]:
    """Serve page a; yield its URL. Raises FileNotFoundError when plotly.js has not been fetched."""
    if (reason := missing()):
        raise FileNotFoundError(reason)
    with tempfile.TemporaryDirectory(prefix="bare-page-") as folder:
        where = Path(folder)
        shutil.copy(BUNDLE, where / "plotly.js")
        (where / "index.html").write_text(HTML.replace("__FIGURE__", json.dumps(focused_figure())),
                                          encoding="utf-8")
        handler = functools.partial(_Quiet, directory=str(where))
        with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as httpd:
            thread = threading.Thread(target=httpd.serve_forever, daemon=True)
            thread.start()
            try:
                yield f"http://127.0.0.1:{httpd.server_address[1]}/index.html"
            finally:
                httpd.shutdown()


def first_heatmap(b, url: str) -> float:
    """One visit of ``url`` in a fresh 1280×720 context: seconds from navigation start to the first heatmap."""
    ctx = b.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = ctx.new_page()
        page.add_init_script(f"({FIRST_HEATMAP})()")
        page.goto(url)
        page.wait_for_function("window.__firstHeatmap !== null", timeout=60_000)
        return page.evaluate("window.__firstHeatmap") / 1e3
    finally:
        ctx.close()


if __name__ == "__main__":  # python benchmarks/bare_page.py: page a's median of 5 visits
    import statistics

    from browser_utils import browser

    with bare_page() as url, browser() as b:
        first_heatmap(b, url)  # warm the browser process
        print(f"page a (bare plotly.js page), median of 5: {statistics.median(first_heatmap(b, url) for _ in range(5)):.2f} s")
