"""The layout audit's first-screen checks (tests/layout_probe.first_screen): a chart cut by the screen's bottom edge
although it would fit, and a heatmap that uses little of its colour range, found from made-up boxes and values."""
from __future__ import annotations

from layout_probe import first_screen


def chart(top, bottom, used=None, **meta):
    return {"meta": meta or {"stage": "weights"}, "top": top, "bottom": bottom, "used": used}


def test_a_chart_that_could_fit_but_ends_below_the_edge_is_cut():
    found = first_screen([chart(336, 813), chart(296, 703), chart(2347, 3092), chart(100, 900, kind="wide")])
    assert found["cut"] == ["weights"]  # 477 px from 336: cut; 703: whole; below the fold; taller than the screen


def test_a_heatmap_using_a_tenth_of_its_range_is_faint():
    found = first_screen([chart(0, 1, 0.09, kind="scores", scheme="alibi"), chart(0, 1, 0.21, kind="scores"),
                          chart(0, 1, 1.0, kind="scores"), chart(0, 1, None, kind="loss_curve")])
    assert found["faint"] == [("scores", 0.09), ("scores", 0.21)]
