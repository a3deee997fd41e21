"""The sliding-window mask with attention sinks, said the same way on the explorer and in the masks lab."""
from __future__ import annotations

from ..shell.i18n import _


def convention(window: int, sinks: int) -> str:
    """One paragraph: which side is the query, which the key, what True means, for a window ``window`` with ``sinks``."""
    text = _("**Sliding window w = {w}, sinks s = {s}** (True = may attend): row i is the query, column j the key. "
             "Query i may attend key j when 0 ≤ i − j < w (itself and the w − 1 keys before it) or when j < s and "
             "j ≤ i (the first s tokens, kept as attention sinks). It looks back only, so it contains the causal "
             "mask; blocked cells become −∞ before the softmax.").format(w=window, s=sinks)
    if sinks == 0:
        text += " " + _("With s = 0 a query farther than w − 1 tokens from the start no longer sees the first token.")
    return text
