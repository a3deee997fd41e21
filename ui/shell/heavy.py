"""One large computation at a time per server process, so a replica's memory is bounded by design.

The largest legal MiniLM input (6 sentences × 512 tokens) needs ~1.2 GB more while its attention over every layer is
computed (docs/deploy.md, ``benchmarks/bench_memory.py``). One such run fits a replica's 3 GiB; two at once, from two
students on the same replica, would not, and an out-of-memory kill disconnects every student on it. So a computation
whose attention arrays exceed :data:`LARGE_BYTES` holds this process's one slot while it runs, and a second waits
for it, saying so on its page. Inputs of a class's usual size (≤ 128 tokens) stay under the threshold and never wait.

Holding the slot is not enough when the replica already holds much (other sessions' views, caches), so before its
work a large computation also checks that it fits: the process's resident memory now plus :data:`PEAK_FACTOR` × its
attention bytes (a whole page run's increase, checked at its first large computation), plus :data:`HEADROOM`,
must stay under the replica's limit (:func:`memory_limit`: ``AE_MEMORY_LIMIT_MB``, else the
container's cgroup limit; none on a laptop). If not, the caches are emptied (they are recomputed on demand) and the
run waits for sessions to leave, saying so, and after :data:`WAIT_S` s says the server is full instead of computing.

The slot is a re-entrant lock: a large computation that calls another one in the same script thread (a page run, or
a fragment's) does not wait for itself. While waiting, the note is redrawn every second, so a student who changes
the input meanwhile gets the new run at once (Streamlit stops a run at its next element).
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

import streamlit as st

from . import cache
from .i18n import _

LARGE_BYTES = 96 * 2**20  # attention arrays above this are a large computation (6 × 512 tokens, all layers: 453 MB)
WAIT_S = 600  # a run waits at most this long for the slot, then says the server is busy
MEMORY_WAIT_S = 90  # and this long for memory: a closed session is freed after 60 s, a cache entry after 60 s
# measured peak RSS increase ÷ attention bytes of the largest input's heaviest step (benchmarks/bench_memory.py:
# 6 × 512 tokens, rollout and a pair: +1,212 MB for 453 MB of weights, 2.7×), rounded up
PEAK_FACTOR = 2.8
HEADROOM = 256 * 2**20  # kept free for the other students' small runs, which do not take the slot
_slot = threading.RLock()
# per script thread (Streamlit starts one per run, and reruns asked for during a run continue on it): how deep it is
# in large computations (the slot is re-entrant), and whether its memory was checked (the measured need is a run's)
_depth = threading.local()


class ServerFull(RuntimeError):
    """Raised after the page was told the server is busy or full, where ``st.stop()`` cannot stop a run (no page:
    bare Python, tests)."""


def _refuse(note, message: str) -> None:
    note.warning(message, icon=":material/hourglass_disabled:")
    st.stop()  # ends the page's run here
    raise ServerFull(message)


def attention_bytes(batch: int, tokens: int, layers: int, heads: int, stages: int = 1, itemsize: int = 4) -> int:
    """Bytes of ``stages`` attention arrays ``[batch, heads, tokens, tokens]`` over ``layers`` layers."""
    return batch * layers * heads * tokens * tokens * stages * itemsize


@contextlib.contextmanager
def large(nbytes: int, wait_s: float | None = None) -> Iterator[None]:
    """Run the block as a large computation if ``nbytes`` (from :func:`attention_bytes`) exceeds
    :data:`LARGE_BYTES`: one at a time per process, with a note on the page while it waits. If the slot is not
    free within ``wait_s`` seconds (default :data:`WAIT_S`), or the memory not within :data:`MEMORY_WAIT_S`, the page
    says the server is busy or full and the run stops (``st.stop``) before any work.

    Raises:
        ServerFull: the same, outside a page run (``st.stop`` has nothing to stop).
    """
    if nbytes <= LARGE_BYTES:
        yield
        return
    depth = getattr(_depth, "n", 0)
    _acquire(WAIT_S if wait_s is None else wait_s)
    if not getattr(_depth, "admitted", False):  # once per script run: the run's own arrays count in its RSS
        try:
            _admit(int(PEAK_FACTOR * nbytes), MEMORY_WAIT_S if wait_s is None else wait_s)
        except BaseException:  # refused, or a rerun asked for meanwhile: give the slot back
            _slot.release()
            raise
        _depth.admitted = True
    _depth.n = depth + 1
    try:
        yield
    finally:
        _depth.n = depth
        if depth == 0:
            cache.release_free_memory()  # the run's freed arrays go back to the OS before the next one starts
        _slot.release()


def _acquire(limit: float) -> None:
    """Take the slot, saying on the page how long this run has waited; ``st.stop()`` after ``limit`` seconds."""
    if _slot.acquire(blocking=False):
        return
    note, start = st.empty(), time.monotonic()
    while not _slot.acquire(timeout=min(1.0, max(limit, 0.01))):
        waited = time.monotonic() - start
        if waited >= limit:
            _refuse(note, _("This server is still busy with another student's large computation after {s} s. Try "
                            "again in a minute, or use shorter or fewer sentences.").format(s=int(waited)))
        note.info(_("Waiting {s} s: another student's large computation is running on this server, and two at once "
                    "would not fit in its memory. Yours starts as soon as it ends; shorter or fewer sentences never "
                    "wait.").format(s=int(waited)), icon=":material/hourglass_top:")
    try:
        note.empty()
    except BaseException:  # a rerun asked for meanwhile (Streamlit raises it at an element): give the slot back
        _slot.release()
        raise


def memory_limit() -> int | None:
    """This replica's memory limit in bytes: ``AE_MEMORY_LIMIT_MB``, else the cgroup's (v2 ``memory.max``, v1
    ``memory.limit_in_bytes``; what compose's ``memory:`` and a pod's ``limits.memory`` set), else None."""
    if mb := os.environ.get("AE_MEMORY_LIMIT_MB"):
        return int(float(mb) * 2**20)
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            raw = open(path).read().strip()
        except OSError:
            continue
        if raw.isdigit() and int(raw) < 1 << 50:  # "max", or v1's huge number: no limit
            return int(raw)
    return None


def resident_bytes() -> int:
    """This process's resident memory (RSS) in bytes, from ``/proc/self/statm`` (0 where there is none)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _fits(need: int) -> bool:
    limit = memory_limit()
    return limit is None or resident_bytes() + need + HEADROOM <= limit


def _admit(need: int, limit_s: float) -> None:
    """Return once ``need`` more bytes fit under :func:`memory_limit`: at once, after emptying the caches, or after
    waiting (with a note) for sessions to leave; after ``limit_s`` seconds say the server is full and ``st.stop()``."""
    if _fits(need):
        return
    cache.clear_all()
    cache.release_free_memory()
    if _fits(need):
        return
    note, start = st.empty(), time.monotonic()
    while not _fits(need):
        waited = time.monotonic() - start
        if waited >= limit_s:
            _refuse(note, _("This server's memory is full with other students' work, and this input needs about "
                            "{need} MB more. Use shorter or fewer sentences, or try again in a few minutes.").format(
                need=need // 2**20))
        note.info(_("Waiting {s} s for memory: this input needs about {need} MB more than this server has free "
                    "now. It starts when other students' work is released; shorter or fewer sentences need "
                    "less.").format(s=int(waited), need=need // 2**20), icon=":material/hourglass_top:")
        time.sleep(1.0)
        cache.release_free_memory()
    note.empty()
