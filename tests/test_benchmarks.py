"""The benchmark scripts run (CI checks only that; the figures themselves are in the README)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "benchmarks").glob("bench_*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_benchmark_runs_quick(script):
    result = subprocess.run([sys.executable, str(script), "--quick"], cwd=ROOT, capture_output=True, text=True,
                            timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "|" in result.stdout  # printed its table
    print(result.stdout)
