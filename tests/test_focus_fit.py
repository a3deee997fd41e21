"""The focused head's first-screen height (transformer_core.figures.focus_layout.fit_height, stage_figure(fit=)):
the whole figure takes the height asked for while every row keeps its label, cells no flatter than 4:5; with rows too
small it keeps its usual height, square. The cells fill the axes (no blank band from the click markers)."""
from __future__ import annotations

import pytest

from transformer_core import EncoderConfig, run_toy
from transformer_core.figures.stage import stage_figure


@pytest.mark.parametrize("n, fits", [(4, True), (12, True), (20, False)])
def test_a_short_sentence_takes_the_height_asked_for(n, fits):
    trace = run_toy([" ".join(f"w{i}" for i in range(n))], EncoderConfig(d_model=16, n_heads=2))
    usual = stage_figure(trace, "weights", square=True, source=["a sentence"])
    fig = stage_figure(trace, "weights", square=True, source=["a sentence"], fit=422)
    ratio = fig.layout.yaxis.scaleratio
    if fits:
        assert fig.layout.height == 422 < usual.layout.height and 0.8 <= ratio <= 1, (fig.layout.height, ratio)
        plot_h = 422 - fig.layout.margin.t - fig.layout.margin.b
        assert plot_h / n >= 17 and len(fig.layout.yaxis.tickvals) == n  # every row labelled
    else:
        assert fig.layout.height == usual.layout.height and ratio == 1
    assert list(fig.layout.xaxis.range) == [-0.5, n - 0.5] and list(fig.layout.yaxis.range) == [n - 0.5, -0.5]


def test_a_position_by_dimension_stage_takes_the_height_too():
    trace = run_toy(["the cat sat on the mat"], EncoderConfig(d_model=16, n_heads=2))
    fig = stage_figure(trace, "context", source=["a sentence"], fit=422)
    assert fig.layout.height == 422 and fig.layout.yaxis.scaleanchor is None
