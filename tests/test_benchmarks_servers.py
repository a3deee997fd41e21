"""The benchmark scripts that start Streamlit servers and speak their websocket (no browser) run: the long actions
and memory benchmarks, and tiny classes through nginx (load_class.py, load_llm.py). CI checks that they run without
an error or a leak; the figures are in docs/benchmarks.md. Split from tests/test_benchmarks.py so that two workers
share them (tests/bench_runs.py)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench_runs import SERVERS, missing, run_quick

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("script", SERVERS)
def test_benchmark_runs_quick(script):
    run_quick(script)


def test_load_class_runs_with_churn_and_no_errors():
    """A tiny class through nginx: 3 seats, sessions replaced every ~4 s, memory read after they leave."""
    sys.path.insert(0, str(ROOT / "deploy"))
    import run_local

    if run_local.nginx_binary() is None:
        pytest.skip("nginx is not installed (Debian: apt-get install -y nginx)")
    result = subprocess.run([sys.executable, "benchmarks/load_class.py", "--sessions", "3", "--replicas", "1",
                             "--duration", "12", "--ramp", "1", "--think", "1", "2", "--life", "4", "--after", "2"],
                            cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "errors 0, leaks 0" in result.stdout, result.stdout[-3000:]
    opened = int(result.stdout.split("sessions at once (")[1].split(" in all")[0])
    assert opened > 3  # seats were re-used by new sessions
    print(result.stdout)


def test_load_llm_runs_a_tiny_class_with_no_errors():
    """The real-model pages under a tiny class through nginx (--quick: 2 students, 1 replica, 10 s): every action
    runs, without an error or a leak. Skipped, saying why, without nginx or SmolLM2."""
    script = ROOT / "benchmarks" / "load_llm.py"
    if (reason := missing(script.name)):
        print(f"load_llm.py skipped: {reason}")
        pytest.skip(f"load_llm.py cannot run: {reason}")
    result = subprocess.run([sys.executable, str(script), "--quick"], cwd=ROOT, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    # the student alone does every action of a cycle (Generate and the /modern tabs too); the class, what 10 s allow
    assert "alone, 2 cycle(s): errors 0" in result.stdout, result.stdout[-3000:]
    assert "errors 0, leaks 0" in result.stdout, result.stdout[-3000:]
    for action in ("open", "tile"):
        row = next(line for line in result.stdout.splitlines() if line.startswith(f"| {action} |"))
        assert int(row.split("|")[2]) > 0, row
    print(result.stdout)


def test_the_load_test_sees_a_leak_in_one_pass():
    """Every other session's word is searched for in one pattern: whole words only (a WordPiece "##" piece or a
    longer word is not the marker)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from load_class import any_of

    others = any_of([b"lantern", b"harbour", b"quiver"])
    assert others.findall(b'"lantern" and harbours, ##quiver') == [b"lantern"]
    assert others.findall(b"quiver.lantern") == [b"quiver", b"lantern"]
    assert others.findall(b"nothing here") == [] and any_of([]) is None
