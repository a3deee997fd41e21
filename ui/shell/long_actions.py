"""Long actions (seconds of a core each): one at a time per server process, a note while one waits, and a limit per
session, so no link or click can hold a replica's core for long behind the other students' backs.

A *long action* is a computation that takes seconds of one core however small its memory is: ranking every head by
ablation (SmolLM2's 270, MiniLM's 72), patching every head and position, timing 32 tokens without a KV cache, the
KV-cache tab's first generation on SmolLM2, a large pasted reference set's means. :mod:`ui.shell.heavy` bounds
*memory* (one large computation at a time); this module bounds *time*:

* **Turns.** At most :func:`at_once` long actions run at once per process (``AE_LONG_ACTIONS_AT_ONCE``, default 1:
  a replica serves one core). Another waits for its turn with a note in the page's language saying how long so far,
  redrawn every second (a student who changes the input meanwhile gets the new run at once); after
  :func:`wait_limit` seconds (``AE_LONG_ACTIONS_WAIT_S``, default 300) it says the server is busy instead. Short
  page runs never wait here: they share the core with the long action as before.
* **A limit per session.** A session may start at most :func:`per_session` long actions
  (``AE_LONG_ACTIONS_PER_SESSION``, default 6) in any :func:`window` seconds (``AE_LONG_ACTIONS_WINDOW_S``, default
  600). The next one is refused before any work, with a note saying in how many minutes it can run again.
* **What is cached is free.** Callers ask first whether the result is already cached
  (:func:`ui.shell.cache.cached`) and enter :func:`turn` only when it must be computed, so a result another student
  already paid for is served without a turn and without counting.

An action that ends in an error (an input the computation refuses, said on the page) is not counted.
Entering :func:`turn` inside another (the same script thread) neither waits nor counts again. A long action that
is also large (:func:`ui.shell.heavy.large`) takes its turn here first, then the memory slot, always in that order.
"""
from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Iterator

import streamlit as st

from .i18n import _, ngettext

clock = time.monotonic  # (a test may move time on)
HISTORY_KEY = "_ae_long_actions"  # session state: the monotonic start times of this session's long actions


def at_once() -> int:
    """Long actions that may run at once in one process (``AE_LONG_ACTIONS_AT_ONCE``, default 1)."""
    return max(1, int(os.environ.get("AE_LONG_ACTIONS_AT_ONCE", "1")))


def per_session() -> int:
    """Long actions one session may start per :func:`window` (``AE_LONG_ACTIONS_PER_SESSION``, default 6)."""
    return max(1, int(os.environ.get("AE_LONG_ACTIONS_PER_SESSION", "6")))


def window() -> float:
    """Seconds over which :func:`per_session` is counted (``AE_LONG_ACTIONS_WINDOW_S``, default 600)."""
    return max(1.0, float(os.environ.get("AE_LONG_ACTIONS_WINDOW_S", "600")))


def wait_limit() -> float:
    """Seconds a long action waits for its turn before the page says the server is busy
    (``AE_LONG_ACTIONS_WAIT_S``, default 300)."""
    return max(0.0, float(os.environ.get("AE_LONG_ACTIONS_WAIT_S", "300")))


_lock = threading.Lock()
_running = 0  # long actions running now in this process
_freed = threading.Condition(_lock)
_depth = threading.local()  # per script thread: how deep it is in long actions (a nested one takes no new turn)


class Refused(RuntimeError):
    """The long action did not run: over the session's limit, or no turn within :func:`wait_limit`. The page
    already shows why (the message, in its language)."""


def _history() -> list[float]:
    """This session's long actions still inside the window (oldest first), pruned in session state."""
    now, ss = clock(), st.session_state
    kept = [t for t in ss.get(HISTORY_KEY, []) if now - t < window()]
    ss[HISTORY_KEY] = kept
    return kept


def seconds_until_allowed() -> float:
    """0 when this session may start a long action now, else the seconds until its oldest one leaves the window."""
    history = _history()
    if len(history) < per_session():
        return 0.0
    return max(0.0, history[-per_session()] + window() - clock())


def limit_note(wait_s: float) -> str:
    """The refusal, in the page's language: the limit, the window and when the next long action may run."""
    return ngettext("You have started {n} long computation in the last {m} minutes, the most one student may on "
                    "this shared server, so that every student's page stays quick. This one can run in {wait} min; "
                    "results already computed stay available.",
                    "You have started {n} long computations in the last {m} minutes, the most one student may on "
                    "this shared server, so that every student's page stays quick. This one can run in {wait} min; "
                    "results already computed stay available.", per_session()).format(
        n=per_session(), m=round(window() / 60), wait=max(1, math.ceil(wait_s / 60)))


def cost_note(cost: str) -> str:
    """A caption's second sentence: what one long action costs and the session's limit (``cost``: the time, as the
    caller words it in the page's language, e.g. ``_("about 10 s")``)."""
    return ngettext("It takes the server {cost}, runs one at a time per server, and counts towards the limit of {n} "
                    "such computation per student every {m} minutes.",
                    "It takes the server {cost}, runs one at a time per server, and counts towards the limit of {n} "
                    "such computations per student every {m} minutes.", per_session()).format(
        cost=cost, n=per_session(), m=round(window() / 60))


def _refuse(note, message: str):
    note.warning(message, icon=":material/hourglass_disabled:")
    raise Refused(message)


@contextlib.contextmanager
def turn(note=None, counted: bool = True) -> Iterator[None]:
    """Run the block as this session's long action: refused (:class:`Refused`, with a note on the page) when the
    session is over its limit; otherwise counted, then run once a turn is free, with a note while it waits.

    ``note``: where the notes go (an ``st.empty()`` or a container; default a new ``st.empty()`` here).
    ``counted=False``: a computation of a second or two that students repeat as they explore (the causal page's
    curve over checkpoints for a new set of heads) takes a turn but is neither limited nor counted.

    Raises:
        Refused: over the limit, or no turn within :func:`wait_limit` seconds (then it is not counted).
    """
    global _running
    if getattr(_depth, "n", 0):  # inside another long action of this run: its turn and count cover this one
        yield
        return
    note = st.empty() if note is None else note
    if counted and (wait_s := seconds_until_allowed()) > 0:
        _refuse(note, limit_note(wait_s))
    start, limit = clock(), wait_limit()
    with _freed:
        while _running >= at_once():
            waited = clock() - start
            if waited >= limit:
                break
            _freed.release()  # draw the note without the lock: Streamlit may stop this run at the element
            try:
                note.info(_("Waiting {s} s for a turn: another student's long computation is running on this server, "
                            "and they run one at a time so that every page stays quick. Yours starts as soon as it "
                            "ends.").format(s=int(waited)), icon=":material/hourglass_top:")
            finally:
                _freed.acquire()
            _freed.wait(timeout=min(1.0, max(limit - waited, 0.01)))
        else:
            _running += 1
            waited = None
    if waited is not None:
        _refuse(note, _("This server is still busy with other students' long computations after {s} s. Try again "
                        "in a few minutes.").format(s=int(waited)))
    try:
        note.empty()
        started = clock()
        if counted:
            st.session_state[HISTORY_KEY] = [*_history(), started]
        _depth.n = 1
        try:
            yield
        except Exception:  # refused by the computation itself (an input it cannot take): not counted
            st.session_state[HISTORY_KEY] = [t for t in _history() if t != started]
            raise
    finally:
        _depth.n = 0
        with _freed:
            _running -= 1
            _freed.notify()


def running() -> int:
    """Long actions running now in this process (tests, diagnostics)."""
    with _lock:
        return _running
