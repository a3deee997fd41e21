"""The benchmark scripts that run their models in their own process run (CI checks only that; the figures are in
docs/benchmarks.md); the scripts' argument checks. The browser's and the servers' benchmarks are in
tests/test_benchmarks_browser.py and tests/test_benchmarks_servers.py (tests/bench_runs.py says why)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench_runs import BENCHMARKS, BROWSER, IN_PROCESS, SERVERS, run_quick

ROOT = Path(__file__).resolve().parent.parent


def test_every_benchmark_is_run_by_one_smoke_test():
    listed = IN_PROCESS + BROWSER + SERVERS
    assert sorted(listed) == sorted(p.name for p in BENCHMARKS.glob("bench_*.py")), "add it to tests/bench_runs.py"
    assert len(set(listed)) == len(listed)


@pytest.mark.parametrize("script", IN_PROCESS)
def test_benchmark_runs_quick(script):
    run_quick(script)


def test_rerun_cpu_runs():
    result = subprocess.run([sys.executable, "benchmarks/rerun_cpu.py", "--repeats", "1"], cwd=ROOT,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| explorer: toggle causal mask |" in result.stdout and "!" not in result.stdout
    print(result.stdout)


@pytest.mark.parametrize("script, argv, said", [
    ("bench_explorer.py", ["--repeats", "0"], "--repeats: must be at least 1, got 0"),  # was "no median for empty data"
    ("bench_ablation.py", ["--threads", "-3"], "--threads: must be at least 1, got -3"),  # was torch's RuntimeError
    ("bench_bertviz.py", ["--sizes", "0"], "--sizes: must be 2 to 512 tokens"),
    ("bench_moves.py", ["--only", "zzz"], "--only 'zzz' matches no interaction"),  # printed an empty table
    # each started replicas and nginx first: a traceback from nginx -t, NaN rows, a hang looking for a 2,851st word
    ("load_class.py", ["--replicas", "0"], "--replicas: must be at least 1, got 0"),
    ("load_class.py", ["--sessions", "-1"], "--sessions: must be at least 1, got -1"),
    ("load_class.py", ["--duration", "0"], "--duration: must be more than 0 s"),
    ("load_class.py", ["--think", "5", "1"], "--think: MIN 5 is more than MAX 1"),
    ("load_class.py", ["--sessions", "99999"], "--sessions: at most"),
    ("load_llm.py", ["--replicas", "0"], "--replicas: must be at least 1, got 0"),
    ("load_llm.py", ["--think", "5", "1"], "--think: MIN 5 is more than MAX 1"),
    ("load_llm.py", ["--solo", "-1"], "--solo: must be 0 or more, got -1"),
])
def test_a_bad_benchmark_argument_is_one_line_and_exit_2(script, argv, said):
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *argv], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr
