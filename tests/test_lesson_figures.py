"""The lesson pages' feature figures (ui/lessons/lesson_figures.py), against Plotly's own helpers."""
from __future__ import annotations

import numpy as np
import pytest

from ui.lessons import lesson_figures as L


@pytest.mark.parametrize("n_heads", [2, 4, 8])
def test_head_lines_are_the_shapes_add_vline_makes(n_heads):
    """The green lines between heads are set in one go; they must be exactly what ``add_vline`` would add per line."""
    matrix = np.random.default_rng(n_heads).normal(size=(5, 32)).astype(np.float32)
    fig = L.feature_figure(matrix, [f"{i}: t" for i in range(5)], "concat", n_heads=n_heads)
    reference = L.feature_figure(matrix, [f"{i}: t" for i in range(5)], "concat", n_heads=1)
    reference.layout.shapes = ()
    d_k = 32 // n_heads
    for h in range(1, n_heads):
        reference.add_vline(x=h * d_k - 0.5, line=dict(color=L.HEAD_LINE, width=2))
    assert [s.to_plotly_json() for s in fig.layout.shapes] == [s.to_plotly_json() for s in reference.layout.shapes]
    assert len(fig.layout.shapes) == n_heads - 1


def test_one_head_has_no_lines():
    fig = L.feature_figure(np.ones((3, 8), np.float32), ["0", "1", "2"], "x", n_heads=1)
    assert not fig.layout.shapes


def test_prose_sections_follow_an_edited_file(tmp_path, monkeypatch):
    """The lesson text is read once per file version, not once per run, and an edited file is read again."""
    monkeypatch.setattr(L, "ASSETS", tmp_path)
    page = tmp_path / "lesson.md"
    page.write_text("<!-- section: a -->\nfirst\n", encoding="utf-8")
    assert L.sections("lesson") == {"a": "first"}
    import os
    page.write_text("<!-- section: a -->\nsecond\n", encoding="utf-8")
    stat = page.stat()
    os.utime(page, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a new version even on a coarse clock
    assert L.sections("lesson") == {"a": "second"}
