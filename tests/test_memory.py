"""Sessions that leave keep nothing alive: no Trace survives them, every cache empties, and the
server's RSS comes back near where it started (a class of 30 shares one server: its memory must not leak).

A real `streamlit run app.py` with short lifetimes (sessions dropped 2 s after their websocket
closes, cache entries 3 s, sweeps every 1 s) and the heap report of ui/shell/diagnostics.py.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "deploy")]

import run_local  # noqa: E402
from st_session import StreamlitSession  # noqa: E402

WORDS = "harbour lantern meadow quarrel saddle thimble velvet walnut orchard pebble ribbon glacier".split()


async def heap(url: str) -> dict:
    s = StreamlitSession(url)
    await s.connect()
    run = await s.rerun("diag=heap")
    await s.close()
    raw = run.payload[run.payload.index(b"AE_HEAP ") + 8:].decode("utf-8", "replace")
    return json.JSONDecoder().raw_decode(raw)[0]


async def student(url: str, i: int) -> None:
    s = StreamlitSession(url)
    await s.connect()
    text = f"the {WORDS[i % 12]} sat by the {WORDS[-1 - i % 12]} number {i}\nanother {WORDS[i % 12]} line {i}"
    run = await s.rerun(urllib.parse.urlencode({"text": text}))
    assert run.status == "FINISHED_SUCCESSFULLY" and not run.exceptions, run.exceptions
    for page in ("minilm", "masks_lab", "pipeline", "causal", ""):
        run = await s.rerun(page=page)
        assert not run.exceptions, (page, run.exceptions)
    run = await s.rerun(widget_states=[("Sentences (one per line)", f"a new {WORDS[i % 12]} sentence {i}")])
    assert not run.exceptions
    await s.close()


def test_no_trace_survives_sessions_that_left_and_rss_comes_back():
    port = run_local.free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "AE_DIAGNOSTICS": "1", "AE_CACHE_TTL_S": "3", "AE_CACHE_FIXED_TTL_S": "3",
           "AE_CACHE_SWEEP_S": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--server.headless", "true",
                             "--server.disconnectedSessionTTL", "2"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        run_local.wait_until(lambda: run_local.healthy(url + "/_stcore/health"), 120, "streamlit",
                             dead=lambda: proc.poll() is not None)
        server = psutil.Process(proc.pid)

        async def scenario():
            await student(url, 0)  # warm-up: torch, MiniLM, every page once
            await asyncio.sleep(8)
            start = await heap(url), server.memory_info().rss
            for wave in range(2):  # 12 students in all, 6 at a time, each with its own sentences
                await asyncio.gather(*(student(url, 1 + wave * 6 + k) for k in range(6)))
            busy = await heap(url), server.memory_info().rss
            for _ in range(40):  # sessions dropped after 2 s, cache entries after 3 s
                await asyncio.sleep(1)
                end = await heap(url), server.memory_info().rss
                if end[0]["traces"] == 0:
                    break
            return start, busy, end

        (h0, rss0), (h1, rss1), (h2, rss2) = asyncio.run(scenario())
    finally:
        proc.terminate()
        proc.wait(20)
    print(f"traces {h0['traces']} → {h1['traces']} → {h2['traces']}; RSS MB {rss0 / 2**20:.0f} → "
          f"{rss1 / 2**20:.0f} → {rss2 / 2**20:.0f}")
    assert h1["traces"] > 0  # the check can see traces while sessions are there
    assert h2["traces"] == 0 and h2["trace_bytes"] == 0, h2
    assert all(c["entries"] == 0 for c in h2["caches"].values()), h2["caches"]
    assert rss2 <= rss0 * 1.15, f"RSS {rss0 / 2**20:.0f} → {rss2 / 2**20:.0f} MB after the sessions left"
