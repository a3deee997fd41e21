"""A real `streamlit run` server and headless Debian Chromium for browser tests and benchmarks."""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
CHART = '[data-testid="stPlotlyChart"] .main-svg'


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
def streamlit_server(timeout: float = 90.0):
    """Start a fresh `streamlit run app.py` and yield its base URL; stop it afterwards."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


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
