"""ui/shell/cache.py: byte budgets, read-only shared values, one computation per key, expiry."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from transformer_core import EncoderConfig, run_toy
from ui.shell import cache


@pytest.fixture
def tiny(monkeypatch):
    """A fresh cache named "test" with a 1 MB budget and a 0.3 s lifetime."""
    monkeypatch.setitem(cache.BUDGETS_MB, "test", 1)
    monkeypatch.setattr(cache, "TTL_S", 0.3)
    cache._caches.pop("test", None)
    yield
    cache._caches.pop("test", None)


def test_nbytes_of_a_trace_counts_its_arrays():
    trace = run_toy(["the cat sat on the mat"], EncoderConfig(d_model=32, n_heads=4, d_ff=64, seed=0))
    arrays = sum(a.nbytes for a in trace.stages.values()) + trace.mask.nbytes
    assert arrays <= cache.nbytes(trace) <= arrays + 50_000


def test_the_budget_is_bytes_not_entries(tiny):
    calls = []

    @cache.memo("test")
    def block(i: int) -> np.ndarray:
        calls.append(i)
        return np.full(40_000, i, dtype=np.float32)  # 160 kB each: 6 fit in 1 MB

    for i in range(20):
        assert block(i)[0] == i
    info = cache.stats()["test"]
    assert info["bytes"] <= 2**20 and info["entries"] == 6
    block(19)  # the most recent ones are kept …
    block(0)   # … the oldest was evicted and is computed again
    assert calls.count(19) == 1 and calls.count(0) == 2


def test_a_value_larger_than_the_budget_is_returned_not_kept(tiny):
    @cache.memo("test")
    def huge() -> np.ndarray:
        return np.zeros(2**19, dtype=np.float32)  # 2 MB

    assert huge().shape == (2**19,)
    assert cache.stats()["test"]["entries"] == 0


def test_shared_values_are_read_only(tiny):
    @cache.memo("test")
    def trace():
        return run_toy(["a b c"], EncoderConfig(d_model=8, n_heads=2, d_ff=16, seed=1))

    t = trace()
    assert trace() is t  # shared, not copied
    with pytest.raises(ValueError, match="read-only"):
        t.stages["layers.0.attention.weights"][0, 0, 0, 0] = 5.0


def test_one_computation_per_key_while_others_wait(tiny):
    calls = []

    @cache.memo("test")
    def slow(x: int) -> int:
        calls.append(x)
        time.sleep(0.2)
        return x * 2

    results = []
    threads = [threading.Thread(target=lambda: results.append(slow(7))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [14] * 8 and calls == [7]


def test_entries_expire_and_the_sweep_frees_them_without_a_caller(tiny):
    @cache.memo("test")
    def value(i: int) -> np.ndarray:
        return np.ones(1000)

    value(1), value(2)
    assert cache.stats()["test"]["entries"] == 2
    time.sleep(0.4)
    cache.sweep()
    assert cache.stats()["test"] == {"entries": 0, "bytes": 0, "budget": 2**20}


def test_exceptions_are_not_cached(tiny):
    calls = []

    @cache.memo("test")
    def flaky() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("first call fails")
        return 3

    with pytest.raises(RuntimeError):
        flaky()
    assert flaky() == 3 and len(calls) == 2


def test_every_budget_fits_a_replica():
    assert sum(cache.BUDGETS_MB.values()) <= 450  # docs/deploy.md: ≤ 1 GB per replica with ~0.5 GB at idle


def test_per_trace_builds_a_view_once_and_forgets_it_with_the_trace():
    import gc

    trace = run_toy(["the cat sat"], EncoderConfig(d_model=8, n_heads=2, d_ff=16, seed=3))
    built = []

    def build():
        import plotly.graph_objects as go

        built.append(1)
        return go.Figure(go.Heatmap(z=[[len(built)]]))

    first = cache.per_trace(trace, ("focus", "weights", 0), build)
    assert cache.per_trace(trace, ("focus", "weights", 0), build) is first and len(built) == 1
    cache.per_trace(trace, ("focus", "weights", 1), build)
    assert len(built) == 2
    ident = id(trace)
    assert sum(k[0] == ident for k in cache._figures) == 2
    del trace
    gc.collect()
    cache.stats()  # purges the views of traces that are gone (the sweeper does it every 15 s)
    assert not any(k[0] == ident for k in cache._figures)  # the views went with their trace


def test_figure_views_share_one_byte_budget():
    import plotly.graph_objects as go

    trace = run_toy(["the cat sat"], EncoderConfig(d_model=8, n_heads=2, d_ff=16, seed=4))
    big = lambda: go.Figure(go.Heatmap(z=np.zeros((1000, 1000))))  # noqa: E731  8 MB of z
    for i in range(10):
        cache.per_trace(trace, ("big", i), big)
    info = cache.stats()["figures"]
    assert info["bytes"] <= info["budget"] == cache.BUDGETS_MB["figures"] * 2**20
    assert info["entries"] <= 6
