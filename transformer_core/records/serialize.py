"""Traces and figures out to files: JSON, CSV and standalone HTML. Pure; never imports Streamlit.

JSON layout (``trace_to_json``), strict JSON (no ``NaN``/``Infinity`` literals)::

    {
      "format": "attention-explorer-trace/1",
      "tokens": [["the", "cat", "[PAD]"], ...],        # [batch][pos]
      "lengths": [2, ...], "truncated": [false, ...],
      "mask": [[[[true, false, ...]]]] | null,          # bool [batch, 1, query_pos, key_pos]; true = may attend
      "settings": {"model": "toy", "d_model": 64, "n_heads": 8, ..., "seed": 0},
      "stages": {"layers.0.attention.weights": {"dtype": "float32", "shape": [1, 8, 3, 3],
                                                "data": [[[[0.5, ...]]]]}, ...}
    }

Every captured stage is written, in capture order. Values are the float32 numbers widened
to float64 (written with Python's shortest round-trip repr), so reading them back and
narrowing to float32 reproduces the array bit for bit. **Non-finite values are written as
the strings** ``"-inf"``, ``"inf"`` and ``"nan"`` (not ``null``): a blocked cell of
``masked_scores`` is ``"-inf"``, exactly what :func:`~transformer_core.nn.hooks.capture` saw,
and the round trip stays lossless. ``numpy.array(data, dtype="float32")`` and
JavaScript's ``Number("-inf".replace("inf", "Infinity"))`` both decode them.
:func:`trace_from_json` reads back only what a forward pass can capture: finite numbers, and −inf
where the stored mask blocks a masked score (:mod:`transformer_core.records.values`).
"""
from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

import numpy as np

from ..text.i18n import N_, _, language
from ..text.tokenize import normalize_text
from .trace import PATTERN_STAGES, Trace
from .schema import Limits, check_document

if TYPE_CHECKING:
    import pandas as pd

FORMAT = "attention-explorer-trace/1"


# ---------------------------------------------------------------- JSON

def _array_to_lists(a: np.ndarray) -> list:
    """float array → nested lists; non-finite values become ``"-inf"``/``"inf"``/``"nan"``."""
    a = np.asarray(a, dtype=np.float32)
    finite = np.isfinite(a)
    if finite.all():
        return a.tolist()
    obj = a.astype(object)
    obj[np.isneginf(a)] = "-inf"
    obj[np.isposinf(a)] = "inf"
    obj[np.isnan(a)] = "nan"
    return obj.tolist()


def _json_default(value: Any) -> Any:
    """Settings may hold NumPy scalars or tuples; anything else is an error, not a silent str()."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"settings value {value!r} of type {type(value).__name__} is not JSON-serialisable")


def trace_to_dict(trace: Trace) -> dict:
    """The JSON document of :func:`trace_to_json` as plain Python objects."""
    return {
        "format": FORMAT,
        "tokens": [list(t) for t in trace.tokens],
        "lengths": [int(n) for n in trace.lengths],
        "truncated": [bool(t) for t in trace.truncated],
        "mask": None if trace.mask is None else np.asarray(trace.mask, dtype=bool).tolist(),
        "settings": dict(trace.settings),
        "stages": {
            name: {"dtype": "float32", "shape": list(np.shape(a)), "data": _array_to_lists(a)}
            for name, a in trace.stages.items()
        },
    }


def trace_to_json(trace: Trace, *, indent: int | None = None) -> str:
    """Everything in ``trace`` as one strict-JSON string (layout in the module docstring).

    Raises:
        TypeError: a settings value cannot be written as JSON.
    """
    return json.dumps(trace_to_dict(trace), indent=indent, ensure_ascii=False, allow_nan=False,
                      default=_json_default)


class _HugeNumber(ValueError):
    """A whole number with more digits than :attr:`Limits.digits` (raised while parsing)."""


# json's own messages (Python's English), in the session's language (not "Expecting value: line 1 column 1
# (char 0)" on a Chinese page)
_JSON_MESSAGES = {
    "Expecting value": N_("a value was expected"),
    "Expecting property name enclosed in double quotes": N_("a name in double quotes was expected"),
    "Expecting ',' delimiter": N_("a comma was expected"),
    "Expecting ':' delimiter": N_("a colon was expected"),
    "Extra data": N_("more text follows the end of the document"),
    "Unterminated string starting at": N_("a string is not closed"),
    "Invalid control character at": N_("a string holds a control character"),
    "Invalid \\escape": N_("a string holds an invalid backslash escape"),
    "Invalid \\uXXXX escape": N_("a string holds an invalid \\u escape"),
    "Illegal trailing comma before end of object": N_("a comma before the closing brace"),
    "Illegal trailing comma before end of array": N_("a comma before the closing bracket"),
}


def json_error(err: json.JSONDecodeError, text: str) -> str:
    """A JSON syntax error in one line of the session's language: an empty file, a truncated one, or what
    is wrong where (line and column), never Python's English message."""
    if not text.strip():
        return _("not JSON: the file is empty")
    if err.pos >= len(text.rstrip()) and err.msg in ("Expecting value", "Unterminated string starting at",
                                                      "Expecting ',' delimiter", "Expecting ':' delimiter",
                                                      "Expecting property name enclosed in double quotes"):
        return _("not JSON: the file ends too early (it may have been cut off), at line {line}, column {col}").format(
            line=err.lineno, col=err.colno)
    what = _JSON_MESSAGES.get(err.msg)
    return _("not JSON: {what} at line {line}, column {col}").format(
        what=_(what) if what else err.msg[:120], line=err.lineno, col=err.colno)


def _reader(limits: Limits):
    def parse_int(text: str) -> int:
        digits = len(text.lstrip("-"))
        if digits > limits.digits:  # before int(): Python itself refuses more than 4,300 digits
            raise _HugeNumber(_("it holds a whole number of {n} digits; a trace's numbers have at most {limit}").format(
                n=f"{digits:,}", limit=limits.digits))
        return int(text)
    return parse_int


DERIVED_STAGES = (".attention.norms",)  # computed from a model's weights (analysis.value_norms), not captured


def trace_from_json(text: str | bytes, *, limits: Limits = Limits(),
                    required: tuple[str, ...] = ("weights",)) -> Trace:
    """Rebuild the :class:`Trace` written by :func:`trace_to_json` (float32 arrays, bit-identical).

    ``text`` is the JSON as text or as UTF-8 bytes (a file's contents; its size is checked in bytes
    before anything is decoded). The whole document is checked first
    (:func:`transformer_core.records.schema.check_document`): types, valid Unicode, shapes consistent
    with the tokens and with each other, finite numbers (−inf only where the mask blocks), weights
    rows that are distributions, ``limits``, and the attention stages ``required`` of layer 0.
    Tokens then pass the same entrance as typed text
    (:func:`transformer_core.text.tokenize.normalize_text`: NFC, control characters as control pictures).

    Raises:
        ValueError: too large, not UTF-8, not JSON, not a trace document, or an inconsistent one; the
            message says what is wrong, in one line.

    A leading UTF-8 byte-order mark (U+FEFF, as Notepad and other editors save) is skipped.
    """
    size = len(text) if isinstance(text, bytes) or len(text) > limits.size_bytes else \
        len(text.encode("utf-8", "surrogatepass"))
    if size > limits.size_bytes:
        raise ValueError(_("it is {size} bytes; at most {limit} bytes can be read").format(
            size=f"{size:,}", limit=f"{limits.size_bytes:,}"))
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(_("it is not UTF-8 text (byte {n} cannot be read)").format(n=err.start)) from None
    text = text.removeprefix("\ufeff")
    try:
        doc = json.loads(text, parse_int=_reader(limits))
    except _HugeNumber as err:
        raise ValueError(str(err)) from None
    except json.JSONDecodeError as err:
        raise ValueError(json_error(err, text)) from None
    except ValueError as err:
        raise ValueError(_("not JSON: {error}").format(error=str(err)[:160])) from None
    except RecursionError:
        raise ValueError(_("not a trace: it is nested far too deeply (a trace is 7 levels deep)")) from None
    if isinstance(doc, dict) and doc.get("format") is None:
        raise ValueError(_("not a trace document: its {field} field is missing (expected {expected})").format(
            field="'format'", expected=repr(FORMAT)))
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        found = found[:80] if isinstance(found, str) else found if found is None else type(found).__name__
        raise ValueError(_("not a trace document: expected format {expected}, found {found}").format(
            expected=repr(FORMAT), found=repr(found)))
    stages = check_document(doc, limits, required)
    # Derived stages are recomputed, never read: value-weighted norms need the model's W_O, which a file
    # cannot vouch for (its settings may name another model), so a reopened trace shows no norms.
    stages = {name: array for name, array in stages.items() if not name.endswith(DERIVED_STAGES)}
    mask = None if doc["mask"] is None else np.array(doc["mask"], dtype=bool)
    return Trace(
        tokens=tuple(tuple(normalize_text(t) for t in row) for row in doc["tokens"]),
        lengths=tuple(doc["lengths"]),
        truncated=tuple(doc["truncated"]),
        mask=mask, stages=stages, settings=dict(doc.get("settings") or {}),
    )


# ---------------------------------------------------------------- CSV

def row_label(token: str, pos: int) -> str:
    """Plain-text axis label ``"3: the"`` (the position keeps repeated tokens apart; not HTML-escaped)."""
    return f"{pos}: {token}"


def matrix_frame(trace: Trace, stage: str, batch: int = 0, head: int | None = 0, layer: int = 0) -> "pd.DataFrame":
    """One head's matrix as a labelled DataFrame (``head=None``: all heads stacked, head as first index level).

    Rows are query positions ``"{pos}: {token}"``. Columns are key labels (same form) for
    ``scores``/``masked_scores``/``weights``, ``d0 … d{d_head-1}`` for ``q``/``k``/``v``/``context``.
    Blocked cells (mask ``False``) and non-finite values are NaN (empty in CSV); raw
    ``scores`` are kept whole, as in the figure (masking has not happened yet there).

    Raises:
        KeyError: unknown stage or layer.
        IndexError: ``batch`` or ``head`` out of range.
    """
    import pandas as pd  # only CSV needs it (saves ~1 s of import for the other formats)

    data = trace.stage(stage, layer)
    n_batch, n_heads = data.shape[0], data.shape[1]
    if not 0 <= batch < n_batch:
        raise IndexError(f"batch {batch} out of range: the trace has {n_batch} sentence(s)")
    heads = range(n_heads) if head is None else [head]
    for h in heads:
        if not 0 <= h < n_heads:
            raise IndexError(f"head {h} out of range: {stage!r} has heads 0..{n_heads - 1}")
    tokens = trace.tokens[batch]
    rows = [row_label(t, i) for i, t in enumerate(tokens)]
    pattern = stage.rsplit(".", 1)[-1] in PATTERN_STAGES
    frames = []
    for h in heads:
        m = np.array(data[batch, h], dtype=np.float32)  # [query_pos, key_pos] or [pos, d_head]
        m[~np.isfinite(m)] = np.nan
        if pattern and stage != "scores":
            m[~trace.visible(batch)] = np.nan
        cols = rows if pattern else [f"d{j}" for j in range(m.shape[-1])]
        frame = pd.DataFrame(m, index=pd.Index(rows, name="query" if pattern else "position"),
                             columns=pd.Index(cols, name="key" if pattern else "dimension"))
        frames.append(frame)
    if head is not None:
        return frames[0]
    return pd.concat(frames, keys=list(heads), names=["head"])


def matrix_to_csv(trace: Trace, stage: str, batch: int = 0, head: int | None = 0, layer: int = 0) -> str:
    """:func:`matrix_frame` as CSV text: header ``query \\ key,0: the,1: cat,…``; blocked cells empty.

    With ``head=None`` the first column is the head number and the second the query label.
    """
    frame = matrix_frame(trace, stage, batch, head, layer)
    corner = f"{frame.index.names[-1]} \\ {frame.columns.name}"
    index_label = [frame.index.names[0], corner] if head is None else corner
    return frame.to_csv(na_rep="", index_label=index_label, lineterminator="\n")


def csv_file(text: str) -> bytes:
    """CSV text as the bytes of a ``.csv`` file: UTF-8 with a byte-order mark first, so that Excel reads
    Chinese, accented and emoji tokens as they are (without it, Excel on a Chinese Windows reads the file as
    GBK). pandas' ``read_csv`` and Python's ``encoding="utf-8-sig"`` skip the mark. Text sent to stdout has none.
    """
    return ("\ufeff" + text).encode("utf-8")


# ---------------------------------------------------------------- HTML

def figures_to_html(figs: list, title: str, *, description: str = "", config: dict | None = None) -> str:
    """One standalone HTML page holding ``figs`` (Plotly figures), readable offline.

    plotly.js is embedded inline once (``include_plotlyjs=True`` for the first figure,
    ``False`` after), so the file loads no script from the network. ``title`` and
    ``description`` are plain text (escaped here); ``config`` is Plotly's chart config
    (e.g. :func:`transformer_core.figures.stage.chart_config`).
    """
    parts = []
    for i, fig in enumerate(figs):
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0), include_mathjax=False,
                                 config=config, div_id=f"figure-{i}"))
    body = "\n".join(f'<section class="figure">{p}</section>' for p in parts) or "<p>No figures.</p>"
    return (
        f"<!DOCTYPE html>\n<html lang=\"{language()}\">\n<head>\n<meta charset=\"utf-8\">\n"  # the texts' language
        f"<title>{html.escape(title)}</title>\n"
        "<style>body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222;}"
        " h1{font-size:1.3rem;font-weight:600;margin:0 0 .3rem;} p.description{color:#555;margin:0 0 1rem;}"
        " section.figure{margin-bottom:1.5rem;}</style>\n"  # slides keep their own size (figures/slide.py)
        f"</head>\n<body>\n<h1>{html.escape(title)}</h1>\n"
        + (f'<p class="description">{html.escape(description)}</p>\n' if description else "")
        + f"{body}\n</body>\n</html>\n"
    )
