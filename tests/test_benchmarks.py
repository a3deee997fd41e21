"""The benchmark scripts run (CI checks only that; the figures themselves are in the README)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# these need more than the others (bertviz, npm's packages): each says what it misses, and its test skips
OWN_CHECK = [ROOT / "benchmarks" / name for name in ("bench_bertviz.py", "bench_chart_floor.py")]
SCRIPTS = sorted(s for s in (ROOT / "benchmarks").glob("bench_*.py") if s not in OWN_CHECK)


def run_quick(script: Path) -> None:
    result = subprocess.run([sys.executable, str(script), "--quick"], cwd=ROOT, capture_output=True, text=True,
                            timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "|" in result.stdout  # printed its table
    print(result.stdout)


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_benchmark_runs_quick(script):
    run_quick(script)


def _missing(script: Path) -> str | None:
    """The benchmark's own check: Chromium, playwright, bertviz, npm (unless its scripts are cached)."""
    if str(script.parent) not in sys.path:  # its imports of the scripts beside it (cli_args), as when run
        sys.path.insert(0, str(script.parent))
    spec = importlib.util.spec_from_file_location(script.stem, script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.missing()


@pytest.mark.browser
@pytest.mark.parametrize("script", OWN_CHECK, ids=[s.name for s in OWN_CHECK])
def test_benchmark_with_its_own_needs_runs_quick(script):
    if (reason := _missing(script)):
        pytest.skip(f"{script.name} cannot run: {reason}")
    run_quick(script)


def test_rerun_cpu_runs():
    result = subprocess.run([sys.executable, "benchmarks/rerun_cpu.py", "--repeats", "1"], cwd=ROOT,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| explorer: toggle causal mask |" in result.stdout and "!" not in result.stdout
    print(result.stdout)


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
    """The real-model pages under a tiny class through nginx (--quick: 2 students, 1 replica, 20 s): every action
    runs, without an error or a leak. Skipped, saying why, without nginx or SmolLM2."""
    script = ROOT / "benchmarks" / "load_llm.py"
    if (reason := _missing(script)):
        print(f"load_llm.py skipped: {reason}")
        pytest.skip(f"load_llm.py cannot run: {reason}")
    result = subprocess.run([sys.executable, str(script), "--quick"], cwd=ROOT, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    # the student alone does every action of a cycle (Generate and the /modern tabs too); the class, what 20 s allow
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
