"""A heap report for tests and operators, off unless the server runs with ``AE_DIAGNOSTICS=1``.

With it, opening ``/?diag=heap`` shows (and nothing else) a JSON line: how many
:class:`~transformer_core.records.trace.Trace` objects are alive in the process after a full collection,
their bytes, every cache's entries and bytes (:func:`ui.shell.cache.stats`), and how many whole-model forward
calls each real model has run in this process (:func:`count_forwards`). ``tests/test_memory.py`` uses it to check
that sessions which have left keep nothing alive, and the browser tests to check that a click runs no model. Students
never see it: without the variable the parameter is ignored and nothing is counted.
"""
from __future__ import annotations

import gc
import json
import os
import threading

import streamlit as st


def enabled() -> bool:
    return os.environ.get("AE_DIAGNOSTICS") == "1"


_forwards: dict[str, int] = {}  # model name → whole-model forward calls in this process (diagnostics only)
_counted: set[int] = set()
_count_lock = threading.Lock()


def count_forwards(model, name: str) -> None:
    """With diagnostics enabled, count ``model``'s forward calls under ``name`` from now on (once per model object;
    a forward pre-hook, so every thread's calls count). Without diagnostics: nothing."""
    if not enabled():
        return
    with _count_lock:
        if id(model) in _counted:
            return
        _counted.add(id(model))
        _forwards.setdefault(name, 0)

    def counted(*_args) -> None:
        with _count_lock:
            _forwards[name] += 1

    model.register_forward_pre_hook(counted)


def heap_report() -> dict:
    """``{"traces", "trace_bytes", "caches", "forwards"}`` after ``gc.collect()``."""
    from transformer_core.records.trace import Trace

    from . import cache

    gc.collect()
    traces = [o for o in gc.get_objects() if isinstance(o, Trace)]
    with _count_lock:
        forwards = dict(_forwards)
    return {"traces": len(traces), "trace_bytes": sum(cache.nbytes(t) for t in traces), "caches": cache.stats(),
            "forwards": forwards}


def maybe_report() -> None:
    """On ``?diag=heap`` with diagnostics enabled: write the report and stop the run."""
    if enabled() and st.query_params.get("diag") == "heap":
        st.code("AE_HEAP " + json.dumps(heap_report()), language=None)
        st.stop()
