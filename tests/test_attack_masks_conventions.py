"""Regression (from an attack): the masks lab's "two conventions" figures once hid what seeds 000 and 001 do on a row
with no visible key.

The lesson (assets/masks_lab.md) says seed 000 gives NaN there and seed 001 spreads the weight
uniformly (1/n) over all keys. The figures cover that row of every recipe with the grey
"no visible key: weights 0" overlay, so seed 001's 1/n weights are hidden and its hover says 0.
"""
from __future__ import annotations

import numpy as np
import pytest

from apptest_utils import decode, figures, heatmap_z, new_app


def _conventions(at):
    return {f["layout"]["meta"].get("recipe"): f for f in figures(at)
            if f["layout"].get("meta", {}).get("section") == "conventions"}


def test_empty_row_overlay_claims_weights_0_only_where_they_are_0():
    at = new_app(text="The cat sat on the mat\nA dog", causal="1").run()
    at.switch_page("pages/masks_lab.py").run()
    at.session_state["section"] = "Two conventions"  # the lab's sections are lazy tabs
    at.run()
    assert not at.exception
    figs = _conventions(at)
    assert {"seed 000", "seed 001", "ours"} <= set(figs)
    wrong = {}
    for recipe, fig in figs.items():
        z = heatmap_z(fig)  # the recipe's weights; NaN = blank
        for trace in fig["data"][1:]:
            if "weights 0" not in trace.get("hovertemplate", ""):
                continue
            covered = np.array([[x is not None and np.isfinite(x) for x in row] for row in decode(trace["z"])])
            claimed = z[covered]
            if not (np.isfinite(claimed) & (claimed == 0)).all():
                wrong[recipe] = claimed[:6]
    assert not wrong, f"hover says 'weights 0' over these values: {wrong}"
