"""BertViz (``head_view``, ``model_view``) side by side with our pages, in one process and one Chromium.

Both sides show the same attention weights:

* **MiniLM-L6** — ``layers.{i}.attention.weights`` of :func:`~transformer_core.models.minilm_trace.run_minilm`
  (6 layers × 12 heads), against our ``/minilm`` page;
* **toy model** — the same of :func:`~transformer_core.run_toy` with the Explorer's default settings
  (word tokenizer, d_model 64, 8 heads, 1 layer, seed 0), against our Explorer (the default page, ``/``).

**BertViz side.** ``bertviz.head_view`` / ``bertviz.model_view`` with ``html_action="return"``
build a page that loads require.js 2.3.6, d3 5.7.0 and jQuery 2.0.0 from cdnjs (unreachable
offline). ``requirejs@2.3.6``, ``d3@5.7.0`` and ``jquery@2.1.0`` (2.0.0 is not on npm) are
fetched once with ``npm pack`` into ``artifacts/bertviz_js`` (git-ignored), served with
``http.server`` in a thread, and the three cdnjs URLs are rewritten to them. Timed from
navigation start until BertViz has drawn, and the frame after it (see :data:`BERTVIZ_WATCH`):

* head_view: its SVG holds ``heads × n × n`` attention lines (``#attention line``, one layer)
  and the row of ``heads`` head-colour squares, drawn last;
* model_view: ``layers × heads`` thumbnails (``.attn_background``) and the last one holds its
  ``n × n`` lines (rendering is one synchronous loop, so the last thumbnail means all; the total,
  ``layers × heads × n × n`` lines, is checked afterwards, outside the timing).

A view that has not drawn within ``--timeout`` seconds counts as infinitely slow in the median; if the
median is, the view is reported as "nothing drawn in N s" with the last phase its page reached (read
from its console: HTML parsed, BertViz drawing, …). A view that has never drawn is not tried again
in later repeats.

**Our side.** A fresh ``streamlit run app.py`` (``tests/browser_utils.streamlit_server``) in the
same Chromium. :func:`measure_page` (a page visit: a new Streamlit session, st.cache_data warm)
and :func:`measure_change` (in the session: a text typed into the sidebar's "Sentences (one per
line)" and Control+Enter) time until the page has settled: the script run is over (the
``data-test-script-state`` attribute of ``[data-testid="stApp"]`` is ``notRunning`` after a run
that started after t0), every chart (our ``.attention-chart`` element, or ``[data-testid="stPlotlyChart"]``) is
a drawn ``.js-plotly-plot`` (``.main-svg``, and one ``g.hm image`` per visible heatmap trace), and no chart changed for
``--quiet-ms``. The time reported is that of the frame after the *last* change inside any chart,
so the quiet wait is not counted. Both functions know nothing of the pages' layout.

Sizes 16, 128 and 512 tokens (MiniLM: ``[CLS]`` + words + ``[SEP]``; toy: words). Our pages cut
at 128 tokens (MiniLM at 512, its own limit; 4000 characters): the "shown" column gives the count they draw.

Usage::

    python benchmarks/bench_bertviz.py                  # 16, 128, 512 tokens, median of 3, 60 s timeout
    python benchmarks/bench_bertviz.py --quick          # CI: the toy model, 16 tokens, 1 repeat, no warm-up visit
    python benchmarks/bench_bertviz.py --sizes 16 128 --repeats 5 --timeout 120

Prints a markdown table of medians in seconds.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.metadata
import importlib.util
import math
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.parse
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from browser_utils import browser, chromium_missing, streamlit_server  # noqa: E402
from cli_args import positive, token_count  # noqa: E402  (benchmarks/, beside this script)

SIZES = (16, 128, 512)
CACHE = ROOT / "artifacts" / "bertviz_js"  # /artifacts/ is git-ignored
# npm spec → (file inside the package tarball, file name served under /js/)
JS_PACKAGES = {
    "requirejs@2.3.6": ("package/require.js", "require.js"),
    "d3@5.7.0": ("package/dist/d3.min.js", "d3.min.js"),
    "jquery@2.1.0": ("package/dist/jquery.min.js", "jquery.min.js"),  # 2.0.0 is not on npm
}
# cdnjs URL in BertViz's HTML → local URL (require.js paths take no ".js")
CDN_URLS = {
    "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js": "/js/require.js",
    "https://cdnjs.cloudflare.com/ajax/libs/d3/5.7.0/d3.min": "/js/d3.min",
    "https://cdnjs.cloudflare.com/ajax/libs/jquery/2.0.0/jquery.min": "/js/jquery.min",
}
# single WordPiece tokens each (checked at run time), so a text of k words is k + 2 MiniLM tokens
WORDS = ("attention lets every token look at each other word in the sentence and weigh how much it matters "
         "then mixes their values into a new vector for the next layer while many heads work side by side "
         "some follow the previous word others find the verb or the end of a clause and a few just rest on "
         "the last mark when nothing better is there to see").split()
START_TEXT = "The cat sat on the mat."  # the page's text before measure_change types the measured one
TEXTAREA = "Sentences (one per line)"
OUR_PAGES = {"minilm": "/minilm", "toy": "/"}  # the Explorer is the default page
MODEL_NAMES = {"minilm": "MiniLM-L6 (6 × 12 heads)", "toy": "toy (1 × 8 heads)"}
VIEWPORT = {"width": 1400, "height": 1000}

# --- our pages: installed before every page loads --------------------------------------------------------------
OURS_WATCH = r"""
(() => {
  if (window.__bench) return;
  const B = window.__bench = {t0: null, runStart: -1, lastDraw: -1, lastPaint: -1, draws: 0};
  const afterFrame = cb => requestAnimationFrame(() => setTimeout(cb, 0));
  // t0 of a change typed into a text area: the Control+Enter that submits it
  document.addEventListener('keydown', e => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) B.t0 = performance.now();
  }, true);
  new MutationObserver(records => {
    let drew = false;
    for (const r of records) {
      if (r.attributeName === 'data-test-script-state') {
        if (r.oldValue === 'running' || r.target.getAttribute('data-test-script-state') === 'running')
          B.runStart = performance.now();
      } else if (!drew) {
        const el = r.target.nodeType === 1 ? r.target : r.target.parentElement;
        if (el && el.closest('.js-plotly-plot')) drew = true;
      }
    }
    if (drew) {
      B.lastDraw = performance.now();
      B.draws++;
      afterFrame(() => { B.lastPaint = Math.max(B.lastPaint, performance.now()); });
    }
  }).observe(document, {subtree: true, childList: true, attributes: true, attributeOldValue: true,
                        attributeFilter: ['href', 'data-test-script-state']});
})();
"""
# ([t0 or null for "the last Control+Enter", quiet ms]) → true once the page has settled after t0
OURS_SETTLED = r"""([t0, quiet]) => {
  const B = window.__bench;
  if (!B) return false;
  if (t0 === null) t0 = B.t0;
  if (t0 === null) return false;
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning' || B.runStart < t0) return false;
  const boxes = Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"], .attention-chart'));
  if (!boxes.length || B.lastDraw < t0 || B.lastPaint < B.lastDraw) return false;
  for (const box of boxes) {
    const d = box.matches('.js-plotly-plot') ? box : box.querySelector('.js-plotly-plot');
    if (!d || !d.querySelector('.main-svg') || !d._fullData) return false;
    const heatmaps = d._fullData.filter(t => t.type === 'heatmap' && t.visible === true).length;
    if (d.querySelectorAll('g.hm image').length < heatmaps) return false;
  }
  return performance.now() - B.lastPaint >= quiet;
}"""
# what the page looks like when it does not settle (for the error message)
OURS_STATE = """() => ({bench: window.__bench, now: performance.now(),
  script: (document.querySelector('[data-testid="stApp"]') || {getAttribute: () => null})
      .getAttribute('data-test-script-state'),
  charts: Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"], .attention-chart')).map(box => {
    const d = box.matches('.js-plotly-plot') ? box : box.querySelector('.js-plotly-plot');
    return d ? {svg: !!d.querySelector('.main-svg'), images: d.querySelectorAll('g.hm image').length,
                traces: (d._fullData || []).map(t => t.type + (t.visible === true ? '' : ':hidden'))}
             : 'no .js-plotly-plot'; })})"""
OURS_RESULT = """(t0) => { const B = window.__bench; if (t0 === null) t0 = B.t0;
  const charts = document.querySelectorAll('[data-testid="stPlotlyChart"], .attention-chart').length;
  return {ms: B.lastPaint - t0, charts}; }"""

# --- BertViz pages: %-formatted with view ('head' or 'model'), layers, heads, n --------------------------------
BERTVIZ_WATCH = r"""
(() => {
  const VIEW = '%(view)s', L = %(layers)d, H = %(heads)d, N = %(n)d;
  const B = window.__bench = {drawn: null, painted: null};
  const afterFrame = cb => requestAnimationFrame(() => setTimeout(cb, 0));
  document.addEventListener('DOMContentLoaded', () => console.log('__bench:parsed'));
  const drawn = () => {
    const svg = document.querySelector('#vis svg');
    if (!svg) return false;
    if (VIEW === 'head') {
      const lines = svg.querySelector('#attention'), boxes = svg.lastElementChild;
      return !!lines && boxes !== lines && boxes.querySelectorAll('rect').length === H
          && lines.querySelectorAll('line').length === H * N * N;
    }
    const thumbs = svg.querySelectorAll('.attn_background');
    return thumbs.length === L * H && thumbs[L * H - 1].parentNode.querySelectorAll('line').length === N * N;
  };
  const timer = setInterval(() => {
    if (drawn()) {
      clearInterval(timer);
      B.drawn = performance.now();
      console.log('__bench:drawn');
      afterFrame(() => { B.painted = performance.now(); });
    }
  }, 20);
})();
"""
# what a page had reached when the timeout struck, from its console (no evaluate: its main thread may be busy)
PHASES = {"__bench:parsed": "HTML parsed, BertViz's drawing callback not started",
          "d3 version": "BertViz drawing",  # head_view's first console.log, in its require.js callback
          "x ": "BertViz drawing",  # model_view's (renderAxisLabels: "x", x, y)
          "__bench:drawn": "SVG complete, not yet painted"}
BERTVIZ_LINES = "() => document.querySelector('#vis svg').querySelectorAll('line').length"


# --- our side: reusable measurements ----------------------------------------------------------------------------
def _watch(page) -> None:
    """Install :data:`OURS_WATCH` on ``page`` once (it applies from the next navigation on)."""
    if not getattr(page, "_bench_watch", False):
        page.add_init_script(OURS_WATCH)
        page._bench_watch = True


def _wait_settled(page, t0, quiet_ms: float, timeout_s: float) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(OURS_SETTLED, arg=[t0, quiet_ms], polling=100, timeout=timeout_s * 1e3)
    except PlaywrightTimeout:
        state = page.evaluate(OURS_STATE)
        raise RuntimeError(f"{page.url}: not settled in {timeout_s:.0f} s (t0={t0}): {state}") from None


def measure_page(page, url: str, *, timeout_s: float = 300, quiet_ms: float = 750) -> tuple[float, int]:
    """Open ``url`` in ``page``: (seconds from navigation start until every Plotly chart of the settled
    page was drawn, number of charts). Knows nothing of the page's layout (see the module docstring)."""
    _watch(page)
    page.goto(url, wait_until="commit", timeout=timeout_s * 1e3)
    _wait_settled(page, 0, quiet_ms, timeout_s)
    result = page.evaluate(OURS_RESULT, 0)
    return result["ms"] / 1e3, result["charts"]


def measure_change(page, text: str | None = None, *, change=None, label: str = TEXTAREA,
                   timeout_s: float = 300, quiet_ms: float = 750) -> tuple[float, int]:
    """Change the open page in its session and time it until settled: (seconds, number of charts).

    With ``text``: fill the text box named ``label`` and submit with Control+Enter (t0 = that
    keydown, in the page). Otherwise ``change(page)`` is called (t0 = just before the call), e.g.
    ``lambda p: p.get_by_label("Layer").select_option(...)``. The page must have been opened
    with :func:`measure_page`.
    """
    if text is not None:
        box = page.get_by_role("textbox", name=label, exact=True)
        box.fill(text)
        page.evaluate("window.__bench.t0 = null")
        box.press("Control+Enter")
        t0 = None
    else:
        t0 = page.evaluate("window.__bench.t0 = performance.now()")
        change(page)
    _wait_settled(page, t0, quiet_ms, timeout_s)
    result = page.evaluate(OURS_RESULT, t0)
    return result["ms"] / 1e3, result["charts"]


# --- BertViz side -----------------------------------------------------------------------------------------------
def missing() -> str | None:
    """Why this benchmark cannot run here, or None."""
    if (reason := chromium_missing()):
        return reason
    if importlib.util.find_spec("bertviz") is None:
        return "Python package bertviz is not installed (pip install bertviz==1.4.1)"
    if not all((CACHE / "js" / name).exists() for _, name in JS_PACKAGES.values()) and not shutil.which("npm"):
        return f"npm is missing (apt-get install -y npm) and {CACHE / 'js'} does not hold BertViz's scripts yet"
    return None


def fetch_js(cache: Path = CACHE) -> Path:
    """require.js, d3 and jQuery from the npm registry (``npm pack``) into ``cache/js``, once."""
    js = cache / "js"
    js.mkdir(parents=True, exist_ok=True)
    for spec, (member, name) in JS_PACKAGES.items():
        if (js / name).exists():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["npm", "pack", spec, "--silent"], cwd=tmp, check=True, capture_output=True, timeout=300)
            tarball, = Path(tmp).glob("*.tgz")
            with tarfile.open(tarball) as tar:
                data = tar.extractfile(member).read()
        (js / f"{name}.part").write_bytes(data)
        (js / f"{name}.part").rename(js / name)
    return cache


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:  # a page closed mid-download (timeouts)
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def static_server(directory: Path):
    """Serve ``directory`` over HTTP on 127.0.0.1 from a thread; yield the base URL."""
    httpd = _QuietServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(directory)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def bertviz_html(view: str, attention: tuple, tokens: list[str]) -> str:
    """A whole HTML page of BertViz's ``view`` ("head" or "model") with local script URLs."""
    import bertviz

    fn = bertviz.head_view if view == "head" else bertviz.model_view
    html = fn(attention, tokens, html_action="return").data
    for cdn, local in CDN_URLS.items():
        if html.count(cdn) != 1:
            raise RuntimeError(f"bertviz {view}_view HTML has {html.count(cdn)} × {cdn} (expected 1): "
                               "did bertviz change? Update CDN_URLS")
        html = html.replace(cdn, local)
    return (f"<!doctype html>\n<html><head><meta charset='utf-8'><title>bertviz {view}_view</title></head>"
            f"<body>\n{html}\n</body></html>\n")


def measure_bertviz(context, url: str, view: str, layers: int, heads: int, n: int, timeout_s: float):
    """(seconds from navigation start until drawn and the frame after, or None if not drawn in
    ``timeout_s``; "drawn", or the phase the page had reached)."""
    page = context.new_page()
    phase = ["HTML loading"]

    def on_console(msg) -> None:
        for prefix, name in PHASES.items():
            if msg.text.startswith(prefix):
                phase.append(name)

    page.on("console", on_console)
    page.on("pageerror", lambda err: phase.append(f"page error: {str(err)[:200]}"))
    page.on("crash", lambda _: phase.append("renderer crashed"))
    page.add_init_script(BERTVIZ_WATCH % {"view": view, "layers": layers, "heads": heads, "n": n})
    start = time.perf_counter()
    try:
        page.goto(url, wait_until="commit", timeout=timeout_s * 1e3)
        left = timeout_s * 1e3 - (time.perf_counter() - start) * 1e3
        page.wait_for_function("() => window.__bench && window.__bench.painted !== null", polling=100,
                               timeout=max(left, 1))
        painted = page.evaluate("window.__bench.painted")
        lines = page.evaluate(BERTVIZ_LINES)
        expected = (1 if view == "head" else layers) * heads * n * n
        if lines != expected:
            raise RuntimeError(f"{view}_view drew {lines} attention lines, expected {expected}")
        return painted / 1e3, "drawn"
    except Exception as err:  # noqa: BLE001 - a timeout, or a renderer that gave up (crash, out of memory)
        if type(err).__name__ != "TimeoutError" and "crash" not in str(err).lower():
            raise
        if "crash" in str(err).lower() and phase[-1] != "renderer crashed":
            phase.append("renderer crashed")
        log(f"  {view}_view not drawn in {timeout_s:.0f} s; phases seen: {' → '.join(phase)}")
        return None, phase[-1]
    finally:
        with contextlib.suppress(Exception):
            page.close(run_before_unload=False)


# --- inputs -----------------------------------------------------------------------------------------------------
def make_text(n_words: int) -> str:
    """``n_words`` words of :data:`WORDS`, repeated, on one line."""
    return " ".join((WORDS * (n_words // len(WORDS) + 1))[:n_words])


def attention_input(model: str, n: int):
    """(text of n tokens, BertViz attention tuple of [1, head, query, key] tensors per layer, tokens, layers, heads)
    from the same trace function our page uses."""
    import torch

    from transformer_core import EncoderConfig, run_toy
    from transformer_core.models.minilm_trace import run_minilm
    from ui.shell.controls import DEFAULTS

    if model == "minilm":
        text = make_text(n - 2)
        trace = run_minilm([text], max_tokens=n)
    else:
        text = make_text(n)
        d_model = DEFAULTS["d_model"]  # as ui.parts.toy_compute.toy_trace with the sidebar's defaults
        config = EncoderConfig(d_model=d_model, n_heads=DEFAULTS["n_heads"], d_ff=4 * d_model, n_layers=1,
                               seed=DEFAULTS["seed"])
        trace = run_toy([text], config, tokenizer="word", causal=False, padding=True, max_tokens=n)
    tokens = list(trace.tokens[0])
    if len(tokens) != n or trace.truncated[0]:
        raise RuntimeError(f"{model}: the text has {len(tokens)} tokens, expected {n} (a word of WORDS split?)")
    attention = tuple(torch.from_numpy(trace.stages[f"layers.{i}.attention.weights"].copy())
                      for i in range(trace.n_layers))  # BertViz: one [batch, head, query, key] tensor per layer
    return text, attention, tokens, trace.n_layers, trace.n_heads


def tokens_shown(model: str, text: str) -> int:
    """Tokens our page draws for this one-line text (after its character and token limits)."""
    from transformer_core.text.tokenize import batch_tokens
    from ui.shell.controls import MAX_TOKENS, split_sentences

    sentences, _ = split_sentences(text)
    if model == "minilm":
        from transformer_core.text.tokenize import load_wordpiece

        from ui.minilm.compute import MAX_MINILM_TOKENS

        return min(len(load_wordpiece().encode(sentences[0], add_special_tokens=True).ids), MAX_MINILM_TOKENS)
    return batch_tokens(list(sentences), "word", MAX_TOKENS).lengths[0]


# --- the run ----------------------------------------------------------------------------------------------------
def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI (checks that it runs): the toy model unless --models "
                                                             "says, 16 tokens, 1 repeat, 20 s timeout, no warm-up visit")
    parser.add_argument("--repeats", type=positive, default=None, help="timed runs per cell (default 3)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds before a view counts as not drawn "
                                                                    "(default 60)")
    parser.add_argument("--sizes", type=token_count, nargs="+", default=None, help="token counts (default 16 128 512)")
    parser.add_argument("--models", nargs="+", choices=list(OUR_PAGES), default=None, help="default: both (--quick: toy)")
    parser.add_argument("--quiet-ms", type=float, default=750, help="our page counts as settled after this "
                                                                     "long without a chart change")
    args = parser.parse_args(argv)
    if (reason := missing()):
        sys.exit(f"cannot run: {reason}")
    repeats = args.repeats or (1 if args.quick else 3)
    timeout = args.timeout or (20.0 if args.quick else 60.0)
    sizes = args.sizes or ((16,) if args.quick else SIZES)
    # --quick exercises every step once on the cheaper page (no MiniLM load in the server)
    args.models = args.models or (["toy"] if args.quick else list(OUR_PAGES))
    load_start = loadavg()
    import bertviz  # noqa: F401
    import streamlit

    fetch_js()
    pages_dir = CACHE / "pages"
    shutil.rmtree(pages_dir, ignore_errors=True)
    pages_dir.mkdir(parents=True)
    rows = []
    with static_server(CACHE) as static, streamlit_server(timeout=180) as app, browser() as chromium:
        ours_ctx = chromium.new_context(viewport=VIEWPORT)
        viz_ctx = chromium.new_context(viewport=VIEWPORT)
        # fresh server: the first visit leaves the legacy navigation and loads MiniLM; also fills the browser cache
        for model in [] if args.quick else args.models:  # --quick: the cold visit below loads what it needs
            page = ours_ctx.new_page()
            measure_page(page, app + OUR_PAGES[model], timeout_s=300, quiet_ms=args.quiet_ms)
            page.close()
        for n in sizes:
            for model in args.models:
                log(f"{model}, {n} tokens: building BertViz HTML …")
                text, attention, tokens, layers, heads = attention_input(model, n)
                sizes_mb, urls = {}, {}
                for view in ("head", "model"):
                    html = bertviz_html(view, attention, tokens)
                    path = pages_dir / f"{model}_{n}_{view}.html"
                    path.write_text(html, encoding="utf-8")
                    sizes_mb[view] = path.stat().st_size / 1e6
                    urls[view] = f"{static}/pages/{path.name}"
                    del html
                del attention
                url = f"{app}{OUR_PAGES[model]}?{urllib.parse.urlencode({'text': text})}"
                start_url = f"{app}{OUR_PAGES[model]}?{urllib.parse.urlencode({'text': START_TEXT})}"
                shown = tokens_shown(model, text)
                log(f"  HTML head_view {sizes_mb['head']:.1f} MB, model_view {sizes_mb['model']:.1f} MB; "
                    f"our page shows {shown} tokens")
                page = ours_ctx.new_page()
                cold, charts = measure_page(page, url, quiet_ms=args.quiet_ms)  # first visit: the page computes
                page.close()
                times = {"head": [], "model": [], "visit": [], "change": []}  # math.inf: not drawn in time
                failed, phase = {}, {}  # view → phase reached at its (last) timeout; failed: never drew
                for r in range(repeats):  # the four take turns, so load drifts hit all alike
                    for view in ("head", "model"):
                        if view in failed:  # never drew: not tried again
                            continue
                        seconds, seen = measure_bertviz(viz_ctx, urls[view], view, layers, heads, n, timeout)
                        times[view].append(math.inf if seconds is None else seconds)
                        if seconds is None:
                            phase[view] = seen
                            if not any(map(math.isfinite, times[view])):
                                failed[view] = seen
                    page = ours_ctx.new_page()
                    seconds, charts = measure_page(page, url, quiet_ms=args.quiet_ms)
                    times["visit"].append(seconds)
                    page.close()
                    page = ours_ctx.new_page()
                    measure_page(page, start_url, quiet_ms=args.quiet_ms)
                    seconds, _ = measure_change(page, text, quiet_ms=args.quiet_ms)
                    times["change"].append(seconds)
                    page.close()
                    log(f"  repeat {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" if math.isfinite(v[-1]) else
                                                          f"{k} not drawn" for k, v in times.items() if v))
                for path in pages_dir.glob(f"{model}_{n}_*.html"):
                    path.unlink()
                rows.append(dict(name=model, n=n, shown=shown, charts=charts, mb=sizes_mb, cold=cold, phase=phase,
                                 late={k: sum(not math.isfinite(t) for t in v) for k, v in times.items()},
                                 runs={k: len(v) for k, v in times.items()},
                                 **{k: statistics.median(v) for k, v in times.items()}))
        version = chromium.version
        ours_ctx.close()
        viz_ctx.close()
    shutil.rmtree(pages_dir, ignore_errors=True)
    load_end = loadavg()

    def secs(row, view):
        if not math.isfinite(row[view]):
            return f"nothing drawn in {timeout:.0f} s ({row['phase'][view]})"
        late = row["late"][view]
        return f"{row[view]:.2f}" + (f" ({late} of {row['runs'][view]} runs not drawn in {timeout:.0f} s)"
                                     if late else "")

    def ratio(ours, row, view):
        if math.isfinite(row[view]):
            return f"{ours / row[view]:.2f}"
        return f"< {ours / timeout:.2f}"  # BertViz took longer than the timeout

    print(f"\nBertViz {importlib.metadata.version('bertviz')} vs our pages (streamlit {streamlit.__version__}), "
          f"headless Chromium {version}, {os.cpu_count()} CPUs; median of {repeats} run(s); BertViz timeout "
          f"{timeout:.0f} s; load average (1, 5, 15 min) at start {load_start}, at end {load_end}\n")
    head = ["model", "tokens", "ours shows tokens", "BertViz HTML head / model (MB)", "BertViz head_view s",
            "BertViz model_view s", "ours: visit s", "ours: change s", "ours cold visit s", "our charts",
            "visit ÷ head_view", "visit ÷ model_view", "change ÷ head_view", "change ÷ model_view"]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for row in rows:
        cells = [MODEL_NAMES[row["name"]], str(row["n"]), str(row["shown"]),
                 f"{row['mb']['head']:.1f} / {row['mb']['model']:.1f}", secs(row, "head"), secs(row, "model"),
                 f"{row['visit']:.2f}", f"{row['change']:.2f}", f"{row['cold']:.2f}", str(row["charts"]),
                 ratio(row["visit"], row, "head"), ratio(row["visit"], row, "model"),
                 ratio(row["change"], row, "head"), ratio(row["change"], row, "model")]
        print("| " + " | ".join(cells) + " |", flush=True)
    print("\nSeconds. BertViz: from navigation start to the frame after its SVG is complete (page served locally, "
          "require.js/d3/jQuery from the browser cache after the first load). Ours: visit = a new session at "
          "?text=… (st.cache_data warm), change = typing the text into the sidebar and Control+Enter; both until "
          "the frame after the last chart change of the settled page; cold = the first visit with this text "
          "(the model runs). Ratios < 1: ours is faster; '< x' where BertViz drew nothing before the timeout.")


if __name__ == "__main__":
    main()
