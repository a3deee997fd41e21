"""The app's focused head (``stage_figure(source=…)``, square cells) labels every k-th token where one label per
token would overlap, on both axes alike: at 23 tokens the ~200-px plot's key labels ran into each other (SmolLM2
page at 1280×720) while the query labels had been thinned. Up to 14 tokens every token keeps its label; a head drawn
across the column (a height given, beyond WIDE_TOKENS) labels every token up to MAX_TICKS, as before."""
from __future__ import annotations

import pytest

from transformer_core import EncoderConfig, run_toy
from transformer_core.figures.stage import stage_figure


def focused(n: int):
    trace = run_toy([" ".join(f"w{i}" for i in range(n))], EncoderConfig(d_model=16, n_heads=2, seed=0), causal=True,
                    max_tokens=128)
    assert len(trace.tokens[0]) == n
    return stage_figure(trace, "weights", head=0, square=True, source=["sentence"], title="layer 0 · head 0")


@pytest.mark.parametrize("n, step", [(14, 1), (23, 2)])
def test_both_axes_of_the_focused_head_label_the_same_positions(n, step):
    fig = focused(n)
    expected = list(range(0, n, step))
    xs = [int(v.split(":")[0]) for v in fig.layout.xaxis.tickvals]
    ys = [int(v.split(":")[0]) for v in fig.layout.yaxis.tickvals]
    assert (xs, ys) == (expected, expected)
    assert fig.layout.xaxis.tickangle == -90 and fig.layout.xaxis.tickfont.size >= 10


def test_a_head_drawn_across_the_column_labels_every_token_up_to_64():
    trace = run_toy([" ".join(f"w{i}" for i in range(64))], EncoderConfig(d_model=16, n_heads=2, seed=0), causal=True,
                    max_tokens=128)
    fig = stage_figure(trace, "weights", head=0, square=True, source=["sentence"], height=840, width_px=700)
    assert len(fig.layout.xaxis.tickvals) == len(fig.layout.yaxis.tickvals) == 64
