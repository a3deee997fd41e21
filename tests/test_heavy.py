"""One large computation at a time, and only if it fits in memory (ui/shell/heavy.py).

Threads stand in for two students' script runs; the Streamlit calls the gate makes while waiting run in bare mode
(no page), which is enough to see that it waits, counts and gives the slot back.
"""
from __future__ import annotations

import threading
import time

import pytest

from ui.shell import heavy

LARGE = heavy.LARGE_BYTES + 1


def run_two_at_once(nbytes: int, seconds: float = 0.3) -> tuple[int, float]:
    """Two threads each hold a ``heavy.large(nbytes)`` block for ``seconds``: the most inside at once, and the
    wall time."""
    inside, most, lock = [0], [0], threading.Lock()

    def student():
        with heavy.large(nbytes, wait_s=30):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(seconds)
            with lock:
                inside[0] -= 1

    start = time.monotonic()
    threads = [threading.Thread(target=student) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return most[0], time.monotonic() - start


@pytest.fixture(autouse=True)
def no_limit(monkeypatch):
    monkeypatch.setenv("AE_MEMORY_LIMIT_MB", "1000000")  # admission passes unless a test says otherwise


def test_two_large_computations_run_one_after_the_other():
    most, seconds = run_two_at_once(LARGE)
    assert most == 1 and seconds >= 0.6


def test_two_small_computations_run_together():
    most, seconds = run_two_at_once(heavy.LARGE_BYTES)  # at the threshold: not large
    assert most == 2 and seconds < 0.6


def test_the_slot_is_reentrant_within_one_run_and_given_back():
    with heavy.large(LARGE):
        with heavy.large(LARGE, wait_s=1):  # the page's computation calls another: it must not wait for itself
            pass
    got = []

    def other():
        got.append(heavy._slot.acquire(timeout=2))
        if got[-1]:
            heavy._slot.release()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert got == [True]  # another thread can take it: nothing was left held


def test_an_exception_inside_gives_the_slot_back():
    with pytest.raises(ZeroDivisionError):
        with heavy.large(LARGE):
            1 / 0
    assert heavy._slot.acquire(blocking=False)
    heavy._slot.release()


def test_the_largest_input_is_large_and_a_class_sentence_is_not():
    # 6 sentences × 512 tokens, every layer: 453 MB of weights; 6 × 128 tokens: 28 MB
    assert heavy.attention_bytes(6, 512, 6, 12) == 452_984_832 > heavy.LARGE_BYTES
    assert heavy.attention_bytes(6, 128, 6, 12) < heavy.LARGE_BYTES


def test_memory_limit_from_the_variable_or_none(monkeypatch):
    monkeypatch.setenv("AE_MEMORY_LIMIT_MB", "3072")
    assert heavy.memory_limit() == 3 * 2**30
    monkeypatch.delenv("AE_MEMORY_LIMIT_MB")
    monkeypatch.setattr("builtins.open", lambda *a, **k: (_ for _ in ()).throw(OSError("no cgroup")))
    assert heavy.memory_limit() is None


def test_resident_bytes_is_this_process_rss():
    psutil = pytest.importorskip("psutil")
    rss = psutil.Process().memory_info().rss
    assert abs(heavy.resident_bytes() - rss) < 64 * 2**20


def in_a_run(block) -> BaseException | None:
    """``block()`` in a new thread, as Streamlit runs each script run: what it raised, or None."""
    raised = []

    def run():
        try:
            block()
        except BaseException as err:  # noqa: BLE001 - handed to the test
            raised.append(err)

    t = threading.Thread(target=run)
    t.start()
    t.join(60)
    return raised[0] if raised else None


def test_a_computation_that_does_not_fit_stops_the_run_before_the_work(monkeypatch):
    """Over the limit even with the caches emptied: after its wait it stops the run (st.stop; outside a page,
    ServerFull) without running the block, and gives the slot back."""
    monkeypatch.setenv("AE_MEMORY_LIMIT_MB", str(heavy.resident_bytes() // 2**20))  # nothing more fits
    ran = []

    def block():
        with heavy.large(LARGE, wait_s=1.5):
            ran.append(True)

    err = in_a_run(block)
    assert isinstance(err, heavy.ServerFull) and "memory is full" in str(err)
    assert ran == []
    assert heavy._slot.acquire(blocking=False)
    heavy._slot.release()


def test_a_computation_that_fits_runs_and_its_run_is_checked_once(monkeypatch):
    """2.8 × 96 MB + 256 MB of headroom fit in 4 GB more; a second large computation of the same run is not checked
    again (the run's own arrays are in the RSS by then), while a new run is."""
    monkeypatch.setenv("AE_MEMORY_LIMIT_MB", str(heavy.resident_bytes() // 2**20 + 4096))
    ran = []

    def block():
        with heavy.large(LARGE, wait_s=1):
            ran.append(1)
        monkeypatch.setenv("AE_MEMORY_LIMIT_MB", "1")  # the limit now says full: this run was admitted already
        with heavy.large(LARGE, wait_s=1):
            ran.append(2)

    assert in_a_run(block) is None and ran == [1, 2]
    assert isinstance(in_a_run(block), heavy.ServerFull)  # a new run is checked (and refused at limit 1 MB)
