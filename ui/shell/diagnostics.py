"""A heap report for tests and operators, off unless the server runs with ``AE_DIAGNOSTICS=1``.

With it, opening ``/?diag=heap`` shows (and nothing else) a JSON line: how many
:class:`~transformer_core.records.trace.Trace` objects are alive in the process after a full collection,
their bytes, and every cache's entries and bytes (:func:`ui.shell.cache.stats`). ``tests/test_memory.py``
uses it to check that sessions which have left keep nothing alive. Students never see it: without
the variable the parameter is ignored.
"""
from __future__ import annotations

import gc
import json
import os

import streamlit as st


def enabled() -> bool:
    return os.environ.get("AE_DIAGNOSTICS") == "1"


def heap_report() -> dict:
    """``{"traces", "trace_bytes", "caches"}`` after ``gc.collect()``."""
    from transformer_core.records.trace import Trace

    from . import cache

    gc.collect()
    traces = [o for o in gc.get_objects() if isinstance(o, Trace)]
    return {"traces": len(traces), "trace_bytes": sum(cache.nbytes(t) for t in traces), "caches": cache.stats()}


def maybe_report() -> None:
    """On ``?diag=heap`` with diagnostics enabled: write the report and stop the run."""
    if enabled() and st.query_params.get("diag") == "heap":
        st.code("AE_HEAP " + json.dumps(heap_report()), language=None)
        st.stop()
