"""The benchmark scripts run (CI checks only that; the figures themselves are in the README)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BERTVIZ = ROOT / "benchmarks" / "bench_bertviz.py"  # needs more than the others: its own test below
SCRIPTS = sorted(s for s in (ROOT / "benchmarks").glob("bench_*.py") if s != BERTVIZ)


def run_quick(script: Path) -> None:
    result = subprocess.run([sys.executable, str(script), "--quick"], cwd=ROOT, capture_output=True, text=True,
                            timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "|" in result.stdout  # printed its table
    print(result.stdout)


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_benchmark_runs_quick(script):
    run_quick(script)


def _bertviz_missing() -> str | None:
    """The benchmark's own check: Chromium, playwright, bertviz, and npm (unless its scripts are cached)."""
    spec = importlib.util.spec_from_file_location("bench_bertviz", BERTVIZ)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.missing()


@pytest.mark.browser
def test_bench_bertviz_runs_quick():
    if (reason := _bertviz_missing()):
        pytest.skip(f"bench_bertviz.py cannot run: {reason}")
    run_quick(BERTVIZ)
