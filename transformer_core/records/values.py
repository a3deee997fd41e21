"""The numbers of a trace document: strict float32 arrays, finite and in range, weights that are distributions.

Called by :func:`transformer_core.records.schema.check_document` once every shape is known to agree.
Each refusal is one ``ValueError`` whose message names the stage and the first bad position
``[batch, head, query_pos, key_pos]`` (or ``[batch, pos, feature]``), in NumPy's row-major order.

Rules (stated in the module docstring of :mod:`transformer_core.records.serialize`):

* the data holds numbers only; the strings ``"-inf"``, ``"inf"`` and ``"nan"`` (how the writer spells
  non-finite values) are read as those values and then judged like them;
* every number is finite in float32, except that ``masked_scores`` may be −inf exactly where the
  stored mask blocks (True = may attend; no mask = nothing blocked);
* every finite number is at most :data:`MAX_MAGNITUDE` in size (blocked masked scores excepted), so the
  explain panel's recomputation (a q·k sum of d_head products, an exp, a weighted sum of values) stays
  finite in float32;
* ``weights`` ``[batch, head, query_pos, key_pos]``: never negative, 0 on a blocked key, and each row
  sums to 1 over its visible keys (within :data:`ROW_SUM_TOLERANCE`), or is all 0 when no key is
  visible (this package's convention; Vaswani et al. 2017, Eq. 1).
"""
from __future__ import annotations

import numpy as np

from ..text.i18n import N_, _

MAX_MAGNITUDE = 1e15  # (1e15)² × 8192 dimensions ≈ 8e33 < float32's 3.4e38
ROW_SUM_TOLERANCE = 1e-3  # float32 softmax over 512 keys is off by ~1e-5 at most
ZERO_TOLERANCE = 1e-6
_SPELLED = {"-inf": -np.inf, "inf": np.inf, "nan": np.nan}
_TYPE_OF = np.frompyfunc(type, 1, 1)


def _at(index) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def _shown(value: float) -> str:
    return "NaN" if np.isnan(value) else f"{value:g}"


_KINDS = {dict: N_("an object"), list: N_("a list"), str: N_("text"), bool: N_("true/false"), type(None): N_("null"),
          int: N_("a number"), float: N_("a number")}


def json_kind(value: object) -> str:
    """What a JSON value is, in words of the current language (``"a list"``, ``"一个列表"``)."""
    kind = _KINDS.get(type(value))
    return _(kind) if kind else type(value).__name__


def _describe(value: object) -> str:
    """A value found in a stage's data where a number belongs: text is quoted, anything else named."""
    if isinstance(value, str):
        return _("the text {text!r}").format(text=value[:20])
    return json_kind(value)


def to_float64(name: str, data: object, shape: tuple[int, ...]) -> np.ndarray:
    """``data`` (nested lists from JSON) as a float64 array of ``shape``; only numbers and the three spelled
    non-finite strings are taken.

    Raises:
        ValueError: ragged or of another shape, or a value that is not a number (named with its position).
    """
    try:
        raw = np.array(data)
    except (ValueError, TypeError, OverflowError, RecursionError):  # ragged, or far too deep
        raise ValueError(_("stage {name!r}: its data is not an array of numbers of shape {shape}").format(
            name=name, shape=list(shape))) from None
    if raw.size == 0 and 0 in shape:
        return np.zeros(shape)
    if raw.shape != shape:
        raise ValueError(_("stage {name!r}: its data has shape {shape} but its header says {header}").format(
            name=name, shape=list(raw.shape), header=list(shape)))
    obj = np.array(data, dtype=object)  # NumPy would read true as 1.0 and the text "0.5" as 0.5: look at types
    kinds = _TYPE_OF(obj)
    number = (kinds == float) | (kinds == int)
    if number.all() and raw.dtype.kind in "fiu":
        return raw.astype(np.float64)
    spelled = (kinds == str) & np.vectorize(lambda x: isinstance(x, str) and x in _SPELLED, otypes=[bool])(obj)
    if not (ok := number | spelled).all():
        where = tuple(np.argwhere(~ok)[0])
        raise ValueError(_('stage {name!r} holds {value} at {at}; its data holds numbers only (and "-inf" where the '
                           'mask blocks)').format(name=name, value=_describe(obj[where]), at=_at(where)))
    out = np.empty(shape, dtype=np.float64)
    with np.errstate(over="ignore"):
        out[number] = [float(x) for x in obj[number]]  # an integer beyond float64 becomes inf (refused below)
    out[spelled] = [_SPELLED[x] for x in obj[spelled]]
    return out


def check_numbers(name: str, values: np.ndarray, blocked: np.ndarray | None) -> np.ndarray:
    """Narrow ``values`` (float64, from :func:`to_float64`) to float32 and check the rules above.

    ``blocked``: bool ``[batch, 1, query_pos, key_pos]`` (True = the mask blocks), or None when the trace
    has no mask. Returns the float32 array.

    Raises:
        ValueError: a number that is not finite (or −inf where the mask lets the query see the key),
            beyond float32 or :data:`MAX_MAGNITUDE`, or weights that are not distributions.
    """
    short = name.rsplit(".", 1)[-1]
    with np.errstate(over="ignore"):
        narrow = values.astype(np.float32)
    pattern = values.ndim == 4 and short in ("masked_scores", "weights")
    block = np.broadcast_to(blocked, values.shape) if blocked is not None and pattern else None
    may_be_minus_inf = block if short == "masked_scores" and block is not None else np.zeros((), dtype=bool)
    bad = ~np.isfinite(narrow) & ~(np.isneginf(narrow) & may_be_minus_inf)
    if bad.any():
        where = tuple(np.argwhere(bad)[0])
        value = values[where]
        if short == "masked_scores" and np.isneginf(value):
            raise ValueError(_("stage {name!r} holds -inf at {at}, where the mask lets the query see the key; −inf may "
                               "stand only where the mask blocks").format(name=name, at=_at(where)))
        if np.isfinite(value):
            raise ValueError(_("stage {name!r} holds {value} at {at}, beyond float32's range (±3.4e38)").format(
                name=name, value=_shown(value), at=_at(where)))
        raise ValueError(_("stage {name!r} holds {value} at {at}; every number must be finite (only masked scores may "
                           "be −inf, where the mask blocks)").format(name=name, value=_shown(value), at=_at(where)))
    big = np.abs(narrow) > MAX_MAGNITUDE
    if short == "masked_scores" and block is not None:
        big &= ~block  # a blocked score may hold a fill such as −1e9 or float32's lowest number
    if big.any():
        where = tuple(np.argwhere(big)[0])
        raise ValueError(_("stage {name!r} holds {value} at {at}; numbers in a trace are at most {limit} in size, so "
                           "every recomputation stays finite").format(
            name=name, value=_shown(values[where]), at=_at(where), limit=f"{MAX_MAGNITUDE:g}"))
    if short == "weights" and values.ndim == 4:
        _check_distributions(name, narrow, block)
    return narrow


def _check_distributions(name: str, w: np.ndarray, block: np.ndarray | None) -> None:
    """Rows of ``w`` ``[batch, head, query_pos, key_pos]``: ≥ 0, 0 where blocked, sum 1 over visible keys."""
    if (negative := w < -ZERO_TOLERANCE).any():
        where = tuple(np.argwhere(negative)[0])
        raise ValueError(_("stage {name!r} is {value} at {at}; attention weights are never negative").format(
            name=name, value=_shown(w[where]), at=_at(where)))
    visible = np.ones(w.shape, dtype=bool) if block is None else ~block
    if (leak := ~visible & (np.abs(w) > ZERO_TOLERANCE)).any():
        where = tuple(np.argwhere(leak)[0])
        raise ValueError(_("stage {name!r} is {value} at {at}, where the mask blocks the key; a blocked key's weight "
                           "is 0").format(name=name, value=_shown(w[where]), at=_at(where)))
    sums = np.where(visible, w, 0).astype(np.float64).sum(-1)  # [batch, head, query_pos]
    expected = visible.any(-1).astype(np.float64)  # 1, or 0 for a row with no visible key
    if (off := np.abs(sums - expected) > ROW_SUM_TOLERANCE).any():
        where = tuple(np.argwhere(off)[0])
        raise ValueError(_("stage {name!r}: row {at} sums to {total} over its visible keys; every row of attention "
                           "weights is a distribution (sum 1, or all 0 when no key is visible)").format(
            name=name, at=_at(where), total=f"{sums[where]:.4g}"))
