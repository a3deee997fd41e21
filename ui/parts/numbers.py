"""The one place page statistics become text: a number that is not finite never reaches the screen as nan/inf.

Every page formats the numbers it writes into notes, captions, LaTeX and tables through :func:`number`
(and tables through :func:`finite_table`). A statistic with nothing to average (a loss over no
prediction, a score over no query) is ``None`` or NaN upstream and is shown as an em dash; −∞, which is
a real value (a blocked score), is shown as the symbol. The page says *why* a statistic is missing in
words beside it (e.g. the causal page's one-token sequence).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

MISSING = "—"


def number(value: float | None, spec: str = ".2f") -> str:
    """``format(value, spec)`` for a finite number; ``"—"`` for None or NaN; ``"−∞"``/``"+∞"`` for infinities.

    >>> number(0.123), number(float("nan")), number(None), number(float("-inf")), number(0.5, ".0%")
    ('0.12', '—', '—', '−∞', '50%')
    """
    if value is None:
        return MISSING
    value = float(value)
    if math.isnan(value):
        return MISSING
    if math.isinf(value):
        return "−∞" if value < 0 else "+∞"
    return format(value, spec)


def finite_table(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ±inf replaced by NaN in its number columns: Streamlit sends NaN as a null, an empty
    cell, never the text "nan" or "inf"."""
    numeric = frame.select_dtypes("number").columns
    if not len(numeric) or np.isfinite(frame[numeric].to_numpy(dtype=float)).all():
        return frame
    out = frame.copy()
    out[numeric] = out[numeric].astype(float).replace([np.inf, -np.inf], np.nan)
    return out
