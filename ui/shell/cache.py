"""Byte-bounded, expiring memo caches for the pages' compute, shared by every session of a process.

Why not ``st.cache_data`` for traces: it bounds *entries*, not bytes (a 512-token MiniLM layer
trace is ~40 MB, a 12-token one ~0.1 MB), keeps an entry nobody asks for again until the process
ends, and unpickles a private copy on every hit (server CPU on every rerun). Here, with
``cachetools`` (a well-kept library) doing the bookkeeping:

* each cache is a ``TTLCache`` whose ``maxsize`` is a byte budget (:data:`BUDGETS_MB`), measured by
  :func:`nbytes`; the least recently used entries go first, and a value larger than the whole
  budget is returned but not kept;
* an entry lives :data:`TTL_S` seconds after it was computed, and a daemon thread drops expired
  entries every :data:`SWEEP_S` seconds and hands freed memory back to the OS
  (:func:`release_free_memory`), so an idle server returns to its idle size;
* one computation per key at a time (``condition``): a class opening the same link computes it once;
* values are shared, not copied, so :func:`freeze` makes every array read-only before it is
  stored: a caller that tried to change one would get ``ValueError: assignment destination is
  read-only`` instead of changing another student's figure. Exceptions are not cached.

Worst case per process: ``sum(BUDGETS_MB)`` = 448 MB (docs/deploy.md; measured in the soak).
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable

import cachetools
import numpy as np
import pandas as pd

from transformer_core.text.i18n import language

# Seconds an entry lives after it was computed. Short enough that a replica is back near its idle
# memory 2 minutes after a class leaves (sessions are dropped 60 s after their websocket closes);
# recomputing a class's shared default trace every 60 s costs ~0.2 s of CPU.
TTL_S = float(os.environ.get("AE_CACHE_TTL_S", 60))  # (the variable: for the memory test)
SWEEP_S = float(os.environ.get("AE_CACHE_SWEEP_S", 15))  # how often expired entries are dropped when nobody asks
# byte budget per cache, named for what it holds; the sum is what a replica may hold in caches (module docstring)
BUDGETS_MB = {
    "toy_traces": 64,  # the toy encoder's traces of the learner's sentences (explorer, guided lessons)
    "lesson_results": 40,  # the teaching labs' small results (masks lab, pipeline, the 2017 page's tabs)
    "encoder_summaries": 32,  # a trained encoder's (MiniLM's) every-layer summaries: head statistics, overviews
    "encoder_layers": 104,  # a trained encoder's one-layer traces, every stage (~40 MB at 512 tokens)
    "llm_summaries": 48,  # a real LLM's every-layer summary of one prompt, with its residual stream (~10 MB at 128)
    "llm_layers": 48,  # a real LLM's one-layer traces, recomputed from that residual stream (~3 MB at 128 tokens)
    "causal_traces": 48,  # the trained causal model's traces of one sequence and checkpoint
    "figures": 48,  # Plotly figures built from a cached trace (per_trace below)
    "fixed_inputs": 16,  # results of inputs no student can change: fixed prompts' generations, rankings, timings
}
# Seconds an entry lives, where not TTL_S: fixed inputs' results (the KV-cache tab's generation on its own prompt, the
# long-inputs tab's unwindowed run, the IOI ranking) are computed once an hour, not once a minute
TTLS_S = {"fixed_inputs": float(os.environ.get("AE_CACHE_FIXED_TTL_S", 3600))}

_caches: dict[str, tuple[cachetools.TTLCache, threading.Condition]] = {}
_sweeper: threading.Thread | None = None
_registry_lock = threading.Lock()


def nbytes(value) -> int:
    """Approximate bytes held by ``value``: arrays and frames exactly, containers and dataclasses
    (a :class:`~transformer_core.records.trace.Trace`) by their parts, anything else by ``sys.getsizeof``."""
    if isinstance(value, np.ndarray):
        return value.nbytes + 112
    if isinstance(value, pd.DataFrame | pd.Series):
        return int(np.sum(value.memory_usage(deep=True)))  # per column for a frame, one number for a series
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(nbytes(k) + nbytes(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return sys.getsizeof(value) + sum(nbytes(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sys.getsizeof(value) + sum(nbytes(getattr(value, f.name)) for f in dataclasses.fields(value))
    return sys.getsizeof(value)


def freeze(value):
    """Make every NumPy array inside ``value`` read-only (in place); returns ``value``."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, dict):
        for v in value.values():
            freeze(v)
    elif isinstance(value, list | tuple):
        for v in value:
            freeze(v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            freeze(getattr(value, f.name))
    return value


def _sweep_forever() -> None:
    while True:
        time.sleep(SWEEP_S)
        sweep()
        with _figures_lock:
            _purge_dead()
        release_free_memory()


def sweep() -> None:
    """Drop every expired entry now (the daemon thread calls this every :data:`SWEEP_S` s), the core's reference
    means included (:func:`transformer_core.analysis.ablation.expire_references`, once that module is loaded)."""
    for cache, cond in list(_caches.values()):
        with cond:
            cache.expire()
    if (ablation := sys.modules.get("transformer_core.analysis.ablation")) is not None:
        ablation.expire_references()


def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim  # glibc (Linux); absent on macOS, musl, Windows
    except (AttributeError, OSError):
        return None


_trim = _malloc_trim()


def _tune_malloc() -> bool:
    """glibc only: serve every block of 128 kB or more (trace arrays, figure buffers) by its own
    ``mmap``, returned to the OS the moment it is freed. glibc otherwise raises that threshold as
    big blocks are freed and then keeps later ones in its heaps, where freed space often cannot
    be handed back. Same as ``MALLOC_MMAP_THRESHOLD_=131072`` in the environment."""
    try:
        return bool(ctypes.CDLL(None).mallopt(-3, 128 * 1024))  # M_MMAP_THRESHOLD
    except (AttributeError, OSError):
        return False


_tune_malloc()


def release_free_memory() -> bool:
    """Hand memory that Python and NumPy have freed back to the operating system (glibc's
    ``malloc_trim(0)``, as Dask's workers do); returns whether it could. Without it, freed traces of
    sessions that left stay in the process's malloc arenas and its RSS never comes back down
    (measured: +90 MB two minutes after 16 sessions left, with nothing of theirs alive)."""
    if _trim is None:
        return False
    _trim(0)
    return True


def memo(name: str, key: Callable = cachetools.keys.hashkey) -> Callable:
    """Decorator: memoize a pure function of hashable arguments in the byte-bounded cache ``name``
    (several functions may share one budget, e.g. the lesson computations).

    Raises:
        KeyError: ``name`` has no budget in :data:`BUDGETS_MB`.
    """
    global _sweeper
    with _registry_lock:
        if name not in _caches:
            cache = cachetools.TTLCache(maxsize=BUDGETS_MB[name] * 2**20, ttl=TTLS_S.get(name, TTL_S),
                                        getsizeof=nbytes)
            _caches[name] = (cache, threading.Condition(threading.RLock()))
        if _sweeper is None:
            _sweeper = threading.Thread(target=_sweep_forever, name="ae-cache-sweeper", daemon=True)
            _sweeper.start()
    cache, cond = _caches[name]

    def decorator(func: Callable) -> Callable:
        @functools.wraps(func)
        def compute(*args, **kwargs):
            return freeze(func(*args, **kwargs))

        # the key names the function too, so functions sharing a budget never collide
        cached = cachetools.cached(cache, key=lambda *a, **k: (func.__qualname__, key(*a, **k)),
                                   lock=cond, condition=cond)(compute)
        cached.is_cached = lambda *a, **k: _holds(cache, cond, cached.cache_key(*a, **k))
        return cached

    return decorator


def _holds(cache: cachetools.TTLCache, cond: threading.Condition, key) -> bool:
    with cond:
        return key in cache  # a TTLCache does not hold an expired entry


def cached(func: Callable, *args, **kwargs) -> bool:
    """Whether ``func(*args, **kwargs)`` (a :func:`memo` function) would be served from its cache now, without
    computing (a long action asks before it takes a turn: what is cached costs nothing and is not counted)."""
    is_cached = getattr(func, "is_cached", None)  # a plain function (a test's stand-in) is never cached
    return bool(is_cached and is_cached(*args, **kwargs))


def figure_nbytes(fig) -> int:
    """Approximate bytes of a Plotly figure: its traces' arrays (z, x, y, customdata, text) plus a
    fixed 20 kB for the objects around them; a figure already turned into JSON (:class:`ui.shell.chart.Spec`) by
    the length of its JSON text; a tuple by its parts."""
    if isinstance(fig, dict):
        return 20_000 + int(getattr(fig, "nbytes", 0))
    if isinstance(fig, tuple):  # a figure with what goes with it (a caption)
        return sum(figure_nbytes(x) if hasattr(x, "data") or isinstance(x, dict) else nbytes(x) for x in fig)
    total = 20_000
    for trace in fig.data:
        for attr in ("z", "x", "y", "customdata", "text", "hovertext"):
            value = getattr(trace, attr, None)
            if value is not None:
                total += np.asarray(value).nbytes
    return total


_figures = cachetools.LRUCache(maxsize=BUDGETS_MB["figures"] * 2**20, getsizeof=figure_nbytes)
_figures_lock = threading.Lock()
_watched: set[int] = set()  # ids of the traces whose views are in _figures (each has a finalizer)


_dead: list[int] = []  # traces gone since the last purge (a finalizer may run inside any lock: no lock here)


def _forget(ident: int) -> None:
    _dead.append(ident)


def _purge_dead() -> None:
    """Drop the views of traces that are gone (call with ``_figures_lock`` held)."""
    while _dead:
        ident = _dead.pop()
        _watched.discard(ident)
        for key in [k for k in _figures if k[0] == ident]:
            del _figures[key]


def per_trace(trace, key: tuple, build: Callable):
    """``build()`` once per (trace object, ``key``) for as long as that trace lives, then shared.

    For figures: a trace from :func:`memo` is one object shared by every session that asked for
    the same settings, so the same view (a class on the default link, a student going back to
    head 2) is built once. Streamlit only reads a figure (``st.plotly_chart`` copies it with
    ``to_dict``), so sharing is safe. One byte budget for all views (``BUDGETS_MB["figures"]``,
    least recently used first); a trace's views are dropped when the trace is. Figures hold words (titles,
    axis titles, hover texts), so the key includes the run's language (:mod:`transformer_core.text.i18n`).
    """
    ident, key = id(trace), (language(), *key)
    with _figures_lock:
        _purge_dead()  # first: a dead trace's id may now belong to this one
        if ident not in _watched:  # a new trace (an id is only reused after its finalizer ran)
            _watched.add(ident)
            weakref.finalize(trace, _forget, ident)
        try:
            return _figures[(ident, key)]
        except KeyError:
            pass
    value = build()  # outside the lock: two sessions may build the same view once each, harmlessly
    with _figures_lock:
        try:
            _figures[(ident, key)] = value
        except ValueError:  # larger than the whole budget: used, not kept
            pass
    return value


def stats() -> dict[str, dict]:
    """``{name: {"entries", "bytes", "budget"}}`` for every cache (benchmarks and tests)."""
    out = {}
    for name, (cache, cond) in _caches.items():
        with cond:
            out[name] = {"entries": len(cache), "bytes": int(cache.currsize), "budget": int(cache.maxsize)}
    with _figures_lock:
        _purge_dead()
        out["figures"] = {"entries": len(_figures), "bytes": int(_figures.currsize), "budget": int(_figures.maxsize)}
    return out


def clear_all() -> None:
    """Empty every cache (tests; a fresh AppTest starts from nothing, as a new process would)."""
    for cache, cond in _caches.values():
        with cond:
            cache.clear()
    with _figures_lock:
        _figures.clear()
    if (ablation := sys.modules.get("transformer_core.analysis.ablation")) is not None:
        ablation.clear_references()
