"""Which positions of an axis carry a tick label: every one up to a limit, else every k-th (the hover names them all)."""
from __future__ import annotations

import math

MAX_TICKS = 64  # every token labelled up to 64 per axis; beyond, every k-th (the hover names them all)


def tick_positions(n: int, max_ticks: int = MAX_TICKS) -> list[int]:
    """Positions to label on an axis of ``n``: all of them up to ``max_ticks``, else every k-th."""
    step = -(-n // max_ticks)  # ceil
    return list(range(0, n, step))


def fitted_positions(n: int, axis_px: float, font_px: float, max_ticks: int = MAX_TICKS) -> list[int]:
    """:func:`tick_positions`, thinned further (every k-th) so that labels ``font_px`` high, stacked across an axis
    about ``axis_px`` long, never touch: a label's box is ~1.3 × its font size across in Chromium, ~1.36 × for Chinese
    (the masks lab's key labels at 14 and 24 tokens, MiniLM's rollout query labels at 134 tokens ran into one
    block; the layout audit measured the boxes)."""
    step = max(-(-n // max_ticks), math.ceil(1.4 * font_px / max(axis_px / max(n, 1), 1e-6)))
    return list(range(0, n, max(1, step)))


def labelled_every(fig) -> int:
    """One query row in how many carries a label in a heatmap figure (its first trace's ``y`` and the tick values)."""
    shown = len(fig.layout.yaxis.tickvals or ()) or 1
    return -(-len(fig.data[0].y) // shown)
