"""The benchmark scripts that drive a Streamlit server in headless Chromium run (CI checks only that; the figures
are in docs/benchmarks.md). Split from tests/test_benchmarks.py so that two workers share them (tests/bench_runs.py)."""
from __future__ import annotations

import pytest

from bench_runs import BROWSER, OWN_CHECK, missing, run_quick

PLAIN = [name for name in BROWSER if name not in OWN_CHECK]


@pytest.mark.parametrize("script", PLAIN)
def test_benchmark_runs_quick(script):
    run_quick(script)


@pytest.mark.browser
@pytest.mark.parametrize("script", OWN_CHECK)
def test_benchmark_with_its_own_needs_runs_quick(script):
    if (reason := missing(script)):
        pytest.skip(f"{script} cannot run: {reason}")
    run_quick(script)
