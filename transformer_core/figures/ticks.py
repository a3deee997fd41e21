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
    about ``axis_px`` long, never touch: a label's box is ~1.2 × its font size across (issue 34: the masks lab's key
    labels at 14 and 24 tokens, MiniLM's rollout query labels at 134 tokens ran into one block)."""
    step = max(-(-n // max_ticks), math.ceil(1.25 * font_px / max(axis_px / max(n, 1), 1e-6)))
    return list(range(0, n, max(1, step)))
