"""A real `streamlit run` server and headless Debian Chromium for browser tests and benchmarks."""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Screenshots a person may want to look at after a run: a temporary folder, never the checkout (tests write
# nothing into the repository; `git status` stays clean, .ci/run checks it).
ARTIFACTS = Path(os.environ.get("ATTENTION_ARTIFACTS") or Path(tempfile.gettempdir()) / "attention-explorer-artifacts")
# The folder scripts/make_docs_images.py --browser sets to docs/images/: only then do the browser tests'
# screenshots replace the docs' images; otherwise they go to the test's tmp_path.
DOCS_IMAGES_ENV = "ATTENTION_DOCS_IMAGES"
CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
CHART = '.js-plotly-plot .main-svg'  # our element (ui/shell/chart.py) and st.plotly_chart, its fallback


def images_folder(tmp_path: Path) -> Path:
    """Where a browser test saves a docs screenshot: ``$ATTENTION_DOCS_IMAGES`` when set (by
    ``scripts/make_docs_images.py --browser``), else ``tmp_path``."""
    folder = Path(os.environ.get(DOCS_IMAGES_ENV) or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def chromium_missing() -> str | None:
    """Why the browser cannot be had, or None."""
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install -y chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "Python package playwright is not installed"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_process(root: Path = ROOT, env: dict | None = None, timeout: float = 90.0, output=subprocess.PIPE):
    """Start a fresh `streamlit run app.py` in ``root`` (a checkout) with ``env`` added to this process's
    environment and its output to ``output``; yield ``(base URL, Popen)`` once it is healthy; stop it afterwards."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=root, stdout=output, stderr=subprocess.STDOUT, text=True, env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.3)
        else:
            raise RuntimeError("streamlit server did not become healthy")
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextlib.contextmanager
def streamlit_server(timeout: float = 90.0):
    """Start a fresh `streamlit run app.py` and yield its base URL; stop it afterwards."""
    # ?diag=heap: the model's forward calls (model_forwards)
    with streamlit_process(env={"AE_DIAGNOSTICS": "1"}, timeout=timeout) as (url, _proc):
        yield url


@contextlib.contextmanager
def browser():
    """A headless Chromium driven by Playwright (no browser download: Debian's chromium)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def wait_for_heatmaps(page, count: int, timeout_ms: int = 120_000) -> None:
    """Wait until at least ``count`` charts have their heatmap drawn."""
    page.wait_for_function("(n) => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                           ".filter(d => d.querySelector('g.hm image')).length >= n", arg=count, timeout=timeout_ms)


def plot_data(page, stage: str) -> list:
    """z of every drawn heatmap whose layout.meta.stage is ``stage``, in head order (from the live DOM)."""
    return page.evaluate("""(stage) => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .filter(d => d.layout && d.layout.meta && d.layout.meta.stage === stage)
        .sort((a, b) => a.layout.meta.head - b.layout.meta.head)
        .map(d => Array.from(d._fullData[0].z, row => Array.from(row, v => Number.isFinite(v) ? v : null)))""", stage)


def wait_idle(page, timeout_ms: int = 120_000) -> None:
    """Wait until the app has finished its rerun and every chart on the page has drawn its heatmap."""
    page.wait_for_selector(CHART, timeout=timeout_ms)
    for _check in range(2):
        page.wait_for_function(IDLE, timeout=timeout_ms)
        if not _check:
            page.wait_for_timeout(300)  # a late rerun message would restart the run


# Idle: the script is not running nor asked to (stApp's script state changes at once; the status widget shows only
# after a delay, so a run just asked for by a click looked idle), and every chart has drawn its heatmap.
IDLE = """() => { const app = document.querySelector('[data-testid="stApp"]');
    const state = app && app.getAttribute('data-test-script-state');
    return state !== 'running' && state !== 'rerunRequested' && state !== 'initial'
        && !document.querySelector('[data-testid="stStatusWidget"]')
        && Array.from(document.querySelectorAll('.js-plotly-plot'))
             .every(d => !d.querySelector('g.hm') || d.querySelector('g.hm image')); }"""


def drawn_figures(page) -> list[dict]:
    """``{"meta", "z", "height"}`` of every drawn chart (z of its first trace, NaN → None)."""
    return page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(d => ({
        meta: (d.layout && d.layout.meta) || {},
        height: d._fullLayout.height,
        z: Array.from(d._fullData[0].z || [], row => Array.from(row, v => Number.isFinite(v) ? v : null)),
    }))""")


def transparent_shares(page) -> list[dict]:
    """For every drawn heatmap trace: the share of transparent pixels in its image and the share of
    blank (NaN) cells in its ``z``. A transparent share above the blank share is cells eaten by gaps."""
    return page.evaluate("""async () => {
        const out = [];
        for (const d of document.querySelectorAll('.js-plotly-plot')) {
            const images = d.querySelectorAll('g.hm image');
            const heatmaps = d._fullData.filter(t => t.type === 'heatmap');
            for (let i = 0; i < Math.min(1, images.length); i++) {  // trace 0: the values
                const img = new Image();
                img.src = images[i].getAttribute('href') || images[i].getAttribute('xlink:href');
                await img.decode();
                const c = document.createElement('canvas');
                c.width = img.naturalWidth; c.height = img.naturalHeight;
                const ctx = c.getContext('2d');
                ctx.drawImage(img, 0, 0);
                const px = ctx.getImageData(0, 0, c.width, c.height).data;
                let clear = 0;
                for (let k = 3; k < px.length; k += 4) if (px[k] === 0) clear++;
                const z = heatmaps[i].z;
                let blank = 0, cells = 0;
                for (const row of z) for (const v of row) { cells++; if (!Number.isFinite(v)) blank++; }
                out.push({meta: d.layout.meta || {}, transparent: clear / (px.length / 4), blank: blank / cells,
                          width: c.width, height: c.height});
            }
        }
        return out;
    }""")


# The viewport centre of cell (query, key) of a query × key heatmap chart ``d`` (its first heatmap's axes; our element
# reads a click there, ui/shell/chart.js). With ``scroll``, the cell is first scrolled to the middle of the screen.
CELL_CENTRE = """([d, q, k, scroll]) => {
    const t = d.data.find(t => t.type === 'heatmap');
    const xa = d._fullLayout.xaxis, ya = d._fullLayout.yaxis;
    const at = () => { const r = d.getBoundingClientRect();
        return [r.left + xa._offset + xa.d2p(t.x[k]), r.top + ya._offset + ya.d2p(t.y[q])]; };
    let [x, y] = at();
    if (scroll && (y < 100 || y > innerHeight - 40)) {
        let s = d.parentElement;
        while (s && !(s.scrollHeight > s.clientHeight && /auto|scroll/.test(getComputedStyle(s).overflowY))) {
            s = s.parentElement;
        }
        (s || document.scrollingElement).scrollBy(0, y - innerHeight / 2);
        [x, y] = at();
    }
    return [x, y]; }"""


def cell_centre(page, chart: str, query: int, key: int, scroll: bool = False) -> tuple[float, float]:
    """Where to click cell (query, key) of the chart that the JS expression ``chart`` (a function) returns."""
    x, y = page.evaluate(f"(a) => ({CELL_CENTRE})([({chart})(), ...a])", [query, key, scroll])
    return x, y


def model_forwards(browser, url: str) -> dict[str, int]:
    """Whole-model forward calls each real model has run in the server at ``url`` so far (``?diag=heap``, which the
    test server enables), read in a page of its own: ``{"smollm2": n}``."""
    import json

    page = browser.new_page()
    try:
        page.goto(f"{url}/?diag=heap")
        page.get_by_text("AE_HEAP").first.wait_for(timeout=60_000)
        text = page.get_by_text("AE_HEAP").first.inner_text()
    finally:
        page.close()
    return json.JSONDecoder().raw_decode(text[text.index("AE_HEAP ") + 8:])[0]["forwards"]


def click_overview_tile(page, index: int) -> None:
    """Click the centre of overview tile ``index`` (its transparent marker; layer-major), scrolled to the middle of
    the screen first."""
    x, y = page.evaluate("""(i) => {
        const d = Array.from(document.querySelectorAll('.js-plotly-plot'))
            .find(d => d.layout && d.layout.meta && d.layout.meta.stage === 'overview');
        const p = d.querySelectorAll('.scatterlayer .point')[i];
        p.scrollIntoView({block: 'center'});
        const r = p.getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2]; }""", index)
    page.mouse.click(x, y)

