"""The app's focused head (``stage_figure(source=…)``, square cells) labels every k-th token where one label per
token would overlap, on both axes alike: at 23 tokens the ~200-px plot's key labels ran into each other (SmolLM2
page at 1280×720) while the query labels had been thinned. 14 tokens keep every label; a head drawn across the column
(a height given, beyond WIDE_TOKENS) thins too where its rows are narrower than a label (the layout audit: at
60 tokens the 10-px labels of ~9-px rows touched; before, every token up to MAX_TICKS was labelled)."""
from __future__ import annotations

from transformer_core import EncoderConfig, run_toy
from transformer_core.figures.stage import stage_figure


def labelled(n: int, **size) -> tuple[list[int], list[int], float]:
    """Positions labelled on the key (x) and query (y) axes of the focused head at ``n`` tokens, and the key font."""
    trace = run_toy([" ".join(f"w{i}" for i in range(n))], EncoderConfig(d_model=16, n_heads=2, seed=0), causal=True,
                    max_tokens=128)
    assert len(trace.tokens[0]) == n
    fig = stage_figure(trace, "weights", head=0, square=True, source=["sentence"], title="layer 0 · head 0", **size)
    return ([int(v.split(":")[0]) for v in fig.layout.xaxis.tickvals],
            [int(v.split(":")[0]) for v in fig.layout.yaxis.tickvals], fig.layout.xaxis.tickfont.size)


def test_both_axes_of_the_focused_head_label_the_same_positions():
    keys, queries, font = labelled(23)
    assert keys == queries == list(range(0, 23, 2)) and font == 11  # old: all 23 keys, every 2nd query
    keys, queries, font = labelled(14)
    assert keys == queries == list(range(14)) and font == 12
    keys, queries, font = labelled(30, height=680, width_px=700)  # across the column: every token while it fits
    assert keys == queries == list(range(30)) and font == 10
    keys, queries, font = labelled(64, height=840, width_px=700)  # old: all 64, touching
    assert keys == queries == list(range(0, 64, 2)) and font == 10
    keys, queries, font = labelled(128, height=840, width_px=700)  # old: every 2nd (MAX_TICKS), touching
    assert keys == queries == list(range(0, 128, 4)) and font == 10
