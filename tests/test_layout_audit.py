"""``scripts/layout_audit.py`` runs (CI smoke, as tests/test_benchmarks.py for the benchmarks): its ``--quick`` subset
of three cases passes and prints the summary line. The full matrix is run by hand (docs/layout-audit.md)."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from browser_utils import ROOT, chromium_missing

_missing = chromium_missing()
if _missing:
    print(f"SKIPPING the layout audit's smoke test: {_missing}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]


def test_layout_audit_quick_runs_and_finds_no_overlap(tmp_path):
    result = subprocess.run([sys.executable, "scripts/layout_audit.py", "--quick", "--shots", str(tmp_path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    print(result.stdout[-4000:], result.stderr[-4000:])
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    summary = (r"^TOTAL: 3 cases \(3 page views × 3 sizes × 2 languages\), [1-9]\d* charts checked, [1-9]\d* texts, "
               r"0 overlapping pairs, 0 failed")
    assert re.search(summary, result.stdout, re.M), result.stdout[-2000:]
    assert re.search(r"^FIRST SCREEN: \d+ charts cut by the screen's bottom edge although they would fit under the "
                     r"header, \d+ heatmaps using under a quarter of their colour range", result.stdout, re.M)
    # the explorer's controls (Stage, Head, n_kv_heads box, window, Colours) beside the heatmap they change
    assert re.search(r"^CONTROLS: [1-9]\d* control → figure pairs measured, 0 more than 400 px apart", result.stdout,
                     re.M), result.stdout[-2000:]
    assert len(list(tmp_path.glob("*.png"))) == 3  # --shots: one screenshot a case, into the folder asked for
