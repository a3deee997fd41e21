"""Click → drawn for every interaction a class uses, at 12 and 128 tokens, in headless Chromium at 1280×720.

    python benchmarks/bench_clicks.py               # medians of 5, every interaction
    python benchmarks/bench_clicks.py --only head   # the interactions whose name contains "head"
    python benchmarks/bench_clicks.py --quick       # CI: one repeat of two interactions
    python benchmarks/bench_clicks.py --compare /tmp/old   # the same cases on another checkout, interleaved

**× bare**: a click's median over the first visit of page a (a bare HTML page drawing one 12×12 heatmap
with the same plotly.js, ``bench_visit.bare_page``), measured in the same run; the goal is ≤ 0.2 ×.
One session of a fresh ``streamlit run app.py`` per page and size; each interaction is done once first (a
state the session has not seen: not counted), then ``--repeats`` times, alternating between two values.
**Click → drawn**: from just before the click until the script run (a page or a fragment run) is over and
the last change anywhere in the page's main area or sidebar (not an open list) has been painted, once it
stayed quiet for 0.75 s (the quiet wait is not counted). "Run over" is when the browser saw that run end: the time
after it is the browser's drawing alone. Unlike ``bench_explorer.py`` it does not need a chart to change,
so a tab or a picker that changes only text is timed too. The load average is printed before and after:
on 2 shared cores it moves every number. ``--compare DIR`` runs a second server from another checkout (e.g.
``git archive`` of an older commit) and does every case on both, one after the other, so both see the same load.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from browser_utils import CELL_CENTRE, browser, chromium_missing, free_port, streamlit_server  # noqa: E402
from cli_args import positive  # noqa: E402  (benchmarks/, beside this script)

TWELVE = "The animal didn't cross the street because it was too tired."
LONG = " ".join(f"w{i}" for i in range(128))  # 128 word-level tokens
LONG_MINILM = " ".join(f"word{i % 97}" for i in range(126))  # 126 WordPieces + [CLS] + [SEP] = 128

# the last painted change (childList/text) outside the header, hover layers and the status widget
WATCH = r"""
(() => {
  if (window.__clicks) return;
  const B = window.__clicks = {t0: null, runStart: -1, runEnd: -1, lastPaint: -1};
  const skip = el => !el || el.closest('header, [data-testid="stStatusWidget"], [data-testid="stToolbar"], .hoverlayer, '
                                      + '[data-testid="stTooltipContent"], .react-aria-Popover, [role="listbox"]');
  new MutationObserver(records => {
    let changed = false;
    for (const r of records) {
      if (r.attributeName === 'data-test-script-state') {
        if (r.target.getAttribute('data-test-script-state') === 'running') B.runStart = performance.now();
        else if (r.oldValue === 'running') B.runEnd = performance.now();
        continue;
      }
      const el = r.target.nodeType === 1 ? r.target : r.target.parentElement;
      if (!skip(el)) changed = true;
    }
    if (changed) requestAnimationFrame(() => setTimeout(() => { B.lastPaint = performance.now(); }, 0));
  }).observe(document, {subtree: true, childList: true, characterData: true, attributes: true,
                        attributeOldValue: true, attributeFilter: ['data-test-script-state']});
})();
"""
SETTLED = r"""(quiet) => {
  const B = window.__clicks, app = document.querySelector('[data-testid="stApp"]');
  if (!B || B.t0 === null || !app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  // something changed after the click, and a run seen starting after it has ended (a fast run can go running →
  // notRunning in one React commit, and a fragment's content can be painted before 'running' shows)
  if (B.lastPaint < B.t0 || (B.runStart >= B.t0 && B.runEnd < B.runStart)) return false;
  for (const d of document.querySelectorAll('.js-plotly-plot')) {
    if (!d._fullData) return false;
    const heatmaps = d._fullData.filter(t => t.type === 'heatmap' && t.visible === true).length;
    if (d.querySelectorAll('g.hm image').length < heatmaps) return false;
  }
  return performance.now() - B.lastPaint >= quiet;
}"""


@contextlib.contextmanager
def server_at(root: Path, timeout: float = 120):
    """``streamlit run app.py`` in another checkout (for ``--compare``); its base URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.headless", "true"], cwd=root, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError(f"no server from {root}") from None
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def open_page(page, url: str, timeout_s: float = 300) -> None:
    page.add_init_script(WATCH)
    page.goto(url, timeout=timeout_s * 1e3)
    page.evaluate("window.__clicks.t0 = 0; window.__clicks.runStart = 1")  # settle the first run as a change
    page.wait_for_function(SETTLED, arg=1500, polling=100, timeout=timeout_s * 1e3)


def timed(page, action, timeout_s: float = 60, quiet_ms: float = 750) -> float:
    """Seconds from just before ``action(page)`` until the page settled (see the module docstring); the seconds until
    the browser saw the script run end are kept in ``page.run_over`` (where the time goes: before it, the click's
    trip and the server's run with the browser drawing what it sends; after it, the browser's last drawing)."""
    page.evaluate("window.__clicks.t0 = performance.now()")
    action(page)
    page.mouse.move(2, 700)  # no hover label left over a chart
    try:
        page.wait_for_function(SETTLED, arg=quiet_ms, polling=50, timeout=timeout_s * 1e3)
    except Exception:
        state = page.evaluate("""() => ({clicks: window.__clicks, now: performance.now(), script: document
            .querySelector('[data-testid="stApp"]').getAttribute('data-test-script-state')})""")
        raise RuntimeError(f"not settled in {timeout_s:.0f} s: {state}") from None
    run_end, last, t0 = page.evaluate("[window.__clicks.runEnd, window.__clicks.lastPaint, window.__clicks.t0]")
    page.run_over = max(run_end - t0, 0) / 1e3 if run_end >= t0 else float("nan")
    return (last - t0) / 1e3


# --- actions: (repeat index r) → callable(page); values[r % 2], values[0] differing from the page's default ----
def button_in(group_label: str, names: tuple[str, str]):
    def act(r):
        return lambda page: page.get_by_test_id("stElementContainer").filter(
            has=page.get_by_text(group_label, exact=True)).get_by_role("radio", name=names[r % 2], exact=True).click()
    return act


def pick(label: str, values: tuple[str, str], sidebar: bool = False):
    """Choose ``values[r % 2]`` in the selectbox labelled ``label``."""
    def act(r):
        def do(page):
            root = page.get_by_test_id("stSidebarUserContent") if sidebar else page.get_by_test_id("stMain")
            box = root.get_by_test_id("stSelectbox").filter(has=page.get_by_text(label, exact=True)).first.get_by_role(
                "combobox")
            for attempt in range(5):  # a click or a key does not always open the list at once
                (box.click if attempt % 2 else lambda: box.press("ArrowDown"))()
                try:
                    page.get_by_role("option", name=values[r % 2], exact=True).wait_for(timeout=2000)
                    break
                except Exception:
                    page.keyboard.press("Escape")
            page.evaluate("window.__clicks.t0 = performance.now()")  # the list is open: time the choice only
            page.get_by_role("option", name=values[r % 2], exact=True).click()
        return do
    return act


def toggle(label: str, sidebar: bool = False):
    def act(r):
        def do(page):
            root = page.get_by_test_id("stSidebarUserContent") if sidebar else page.get_by_test_id("stMain")
            root.get_by_text(label, exact=True).click()
        return do
    return act


def tab(names: tuple[str, str]):
    return lambda r: lambda page: page.get_by_role("tab", name=names[r % 2], exact=True).click()


def marker(meta_stage: str, first: int, step: int):
    """Click the centre of a transparent marker (a tile or a cell) of the chart whose meta.stage is given;
    ``meta_stage`` "*" = the focused head (any chart with a meta.head), whose cell ``i`` is found on the heatmap's axes
    when it has no markers (our element reads the heatmap's own click, ui/shell/chart.py cell_clicks)."""
    def act(r):
        def do(page):
            x, y = page.evaluate("""([stage, i]) => {
                const centre = """ + CELL_CENTRE + """;
                const d = Array.from(document.querySelectorAll('.js-plotly-plot')).find(d => d.layout && d.layout.meta
                    && (stage === '*' ? !['heads', 'overview'].includes(d.layout.meta.stage)
                                        && Number.isInteger(d.layout.meta.head) : d.layout.meta.stage === stage));
                const points = d.querySelectorAll('.scatterlayer .point');
                if (!points.length) {  // our element draws no cell markers: the cell's centre on the heatmap's axes
                    const n = d.data.find(t => t.type === 'heatmap').x.length, j = i % (n * n);
                    return centre([d, Math.floor(j / n), j % n, true]);
                }
                points[i % points.length].scrollIntoView({block: 'center'});  // off screen, a click would miss
                const r = points[i % points.length].getBoundingClientRect();
                return [r.left + r.width / 2, r.top + r.height / 2]; }""", [meta_stage, first + step * r])
            page.mouse.click(x, y)
        return do
    return act


def new_text(texts: tuple[str, str]):
    """Type ``texts[r % 2]`` into the sidebar's sentences and apply it (Control+Enter); timed from the key press."""
    def act(r):
        def do(page):
            box = page.get_by_role("textbox", name="Sentences (one per line)", exact=True)
            box.fill(texts[r % 2])
            page.evaluate("window.__clicks.t0 = performance.now()")  # typed: time the apply only
            box.press("Control+Enter")
        return do
    return act


def slider_key(label: str):
    """Move the select slider labelled ``label`` one step left, then back right."""
    def act(r):
        return lambda page: page.get_by_test_id("stMain").get_by_role("slider").first.press(
            "ArrowLeft" if r % 2 == 0 else "ArrowRight")
    return act


EXPLORER = [("stage", button_in("Stage", ("masked", "weights"))),
            ("head", pick("Head", ("3", "1"))),
            ("cell (click)", marker("*", 5, 13)),
            ("cell (query picker)", pick("Query (row)", ("10: tired", "9: too"))),
            ("tile", marker("heads", 4, 1)),  # the head picks above leave head 1 open
            ("explain tab", tab(("3 · Softmax", "2 · Mask"))),
            ("mask toggle (sidebar causal)", toggle("Causal mask", sidebar=True)),
            ("n_heads (sidebar)", pick("n_heads", ("4", "8"), sidebar=True))]
EXPLORER_128 = [(n, a) for n, a in EXPLORER if n != "cell (click)"]  # no cell markers beyond 32 tokens
EXPLORER_128 = [(n, pick("Query (row)", ("2: w2", "3: w3")) if n.startswith("cell") else a) for n, a in EXPLORER_128]
EXPLORER_128 = [(n, pick("n_heads", ("6", "12"), sidebar=True) if n.startswith("n_heads") else a)
                for n, a in EXPLORER_128]
MINILM = [("layer", pick("Layer", ("3", "1"))),
          ("head", pick("Head", ("7", "2"))),
          ("stage", button_in("Stage", ("masked", "weights"))),
          ("overview tile", marker("overview", 13, 5)),
          ("padding switch (sidebar)", toggle("Padding mask", sidebar=True)),
          ("new text (sidebar)", new_text(("The bank of the river was steep.\nA short one.",
                                           "She sat by the bank and read.\nA short one.")))]
CASES = [  # (name, path, query, interactions)
    ("explorer, 12 tokens", "/", {"text": TWELVE}, EXPLORER),
    ("explorer, 128 tokens × 12 heads", "/", {"text": LONG, "d_model": 96, "n_heads": 12}, EXPLORER_128),
    ("MiniLM, 12 tokens", "/minilm", {"text": TWELVE + "\nA short one."}, MINILM),
    ("MiniLM, 128 tokens", "/minilm", {"text": LONG_MINILM + "\nA short one."}, MINILM),
    ("causal page, 32 tokens", "/causal", {}, [
        ("mask toggle", toggle("Mask the future (as trained)")),
        ("checkpoint", slider_key("Training checkpoint (step)")),
        ("head", pick("Head", ("2", "1")))]),
    ("masks lab", "/masks_lab", {}, [("tab", tab(("Two conventions", "Causal and padding")))]),
    ("pipeline", "/pipeline", {}, [("tab", tab(("Split heads", "Projections"))),
                                   ("step tab (attention)", tab(("Attention", "Projections")))]),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=positive, default=5)
    parser.add_argument("--only", default="", help="only interactions whose 'case: name' contains one of these "
                                                   "comma-separated texts (a comma followed by a space belongs to "
                                                   "the text: 'explorer, 12 tokens: head,causal')")
    parser.add_argument("--quick", action="store_true", help="one repeat of two interactions (CI)")
    parser.add_argument("--compare", type=Path, help="another checkout: each case on it too, interleaved")
    args = parser.parse_args()
    if (missing := chromium_missing()):
        print(f"bench_clicks: cannot run: {missing}", file=sys.stderr)
        return 1
    if args.compare is not None and not (args.compare / "app.py").is_file():
        print(f"bench_clicks: --compare {args.compare}: not a checkout of this app (no app.py there)", file=sys.stderr)
        return 2
    repeats = 1 if args.quick else args.repeats
    wanted = re.split(r",(?! )", args.only)  # case names hold ", " (e.g. "explorer, 12 tokens"): not a separator
    cases = [(c, p, q, [(n, a) for n, a in acts if any(w in f"{c}: {n}" for w in wanted)]) for c, p, q, acts in CASES]
    if args.quick:
        cases = [(c, p, q, acts[:2]) for c, p, q, acts in cases[:1]]
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    rows = []
    with contextlib.ExitStack() as stack:
        servers = {"this": stack.enter_context(streamlit_server())}
        if args.compare:
            servers = {"compared": stack.enter_context(server_at(args.compare)), **servers}
        b = stack.enter_context(browser())
        floor = None
        if not args.quick:  # page a, in this run: a bare HTML page drawing one heatmap (bench_visit.py)
            from bench_visit import bare_page, bare_visit  # here: bench_visit imports this module

            bare = stack.enter_context(bare_page())
            bare_visit(b, bare)  # warm
            floor = statistics.median(bare_visit(b, bare)["first"] for _ in range(repeats))
            print(f"  page a (bare plotly.js page): first visit {floor:.2f} s", file=sys.stderr, flush=True)
        for case, path, query, acts in cases:
            for label, url in (servers.items() if acts else ()):
                page = b.new_page(viewport={"width": 1280, "height": 720})
                open_page(page, f"{url}{path}?{urllib.parse.urlencode(query)}")
                for name, act in acts:
                    try:
                        first = timed(page, act(0))  # values[0]: a state this session has not seen
                        times, runs = [], []
                        for r in range(1, repeats + 1):
                            times.append(timed(page, act(r)))
                            runs.append(page.run_over)
                    except Exception as err:  # one broken interaction does not lose the others
                        print(f"  {label}: {case}: {name}: FAILED {str(err)[:300]}", file=sys.stderr, flush=True)
                        page.keyboard.press("Escape")
                        continue
                    rows.append((label, case, name, first, statistics.median(times), max(times),
                                 statistics.median(runs), os.getloadavg()[0]))
                    print(f"  {label}: {case}: {name}: {statistics.median(times):.2f} s "
                          f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
                page.close()
    print(f"\nclick → drawn, one session per page, 1280×720, median of {repeats}"
          + (f"; × bare: over page a's first visit in this run, {floor:.2f} s (goal ≤ 0.2 ×)" if floor else "") + "\n")
    print("| server | page | interaction | first time (s) | median (s) | × bare | max (s) | run over, median (s) "
          "| load after |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for label, case, name, first, median, worst, run_over, load in rows:
        ratio = f"{median / floor:.2f}" if floor else "–"
        print(f"| {label} | {case} | {name} | {first:.2f} | {median:.2f} | {ratio} | {worst:.2f} | {run_over:.2f} "
              f"| {load:.1f} |")
    print(f"\nload average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
