"""What the benchmark smoke tests share (tests/test_benchmarks*.py): which script each file runs, and how.

CI checks only that each benchmark runs (``--quick``: the least that goes through its code path once); the figures
are in docs/benchmarks.md. The scripts are split over three test files by what they start, so that
``pytest -n 2 --dist loadfile`` (one file whole on one worker) does not leave one worker with all of them:

* ``IN_PROCESS`` (tests/test_benchmarks.py): models run in the script's own process;
* ``BROWSER`` (tests/test_benchmarks_browser.py): a Streamlit server and headless Chromium;
* ``SERVERS`` (tests/test_benchmarks_servers.py): Streamlit servers driven over their websocket (and nginx), no
  browser.

tests/test_benchmarks.py checks that every ``benchmarks/bench_*.py`` is in exactly one list.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"

IN_PROCESS = ["bench_ablation.py", "bench_minilm.py", "bench_modern.py", "bench_real_models.py",
              "bench_reference_memory.py", "bench_smollm2.py"]
BROWSER = ["bench_bertviz.py", "bench_chart_floor.py", "bench_click_floor.py", "bench_click_profile.py",
           "bench_clicks.py", "bench_explorer.py", "bench_moves.py", "bench_visit.py"]
SERVERS = ["bench_first_open.py", "bench_long_actions.py", "bench_memory.py"]
# these need more than the others (bertviz, npm's packages): each says what it misses, and its test skips
OWN_CHECK = ["bench_bertviz.py", "bench_chart_floor.py"]
# one torch thread, as tests/conftest.py sets for every test process (OMP_NUM_THREADS): these set their own count
QUICK_ARGS = {"bench_smollm2.py": ["--threads", "1"]}


def run_quick(name: str) -> str:
    """Run ``benchmarks/<name> --quick`` (and its ``QUICK_ARGS``) from the repository root; its output, after asserting that it exited 0 and
    printed a Markdown table. Raises AssertionError with the end of its stderr otherwise."""
    result = subprocess.run([sys.executable, str(BENCHMARKS / name), "--quick", *QUICK_ARGS.get(name, [])], cwd=ROOT,
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "|" in result.stdout  # printed its table
    print(result.stdout)
    return result.stdout


def missing(name: str) -> str | None:
    """The benchmark's own check (its ``missing()``: Chromium, playwright, bertviz, npm, nginx, SmolLM2): why it
    cannot run here, or None."""
    script = BENCHMARKS / name
    if str(BENCHMARKS) not in sys.path:  # its imports of the scripts beside it (cli_args), as when run
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(script.stem, script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.missing()
