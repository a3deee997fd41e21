"""What a long action costs a replica, and what another student's page costs meanwhile (SmolLM2 on /llm and /modern).

    python benchmarks/bench_long_actions.py                      # this checkout
    python benchmarks/bench_long_actions.py --root /path/to/old  # another checkout of the app (before → after)
    python benchmarks/bench_long_actions.py --quick              # CI: the KV-cache tab alone (skipped without SmolLM2)

A real ``streamlit run`` of the checkout, pinned to one core (``os.sched_setaffinity``) with the replicas'
environment (one PyTorch thread, deploy/run_local.py ``REPLICA_ENV``); students speak Streamlit's websocket protocol
(benchmarks/st_session.py), as a browser does. Server CPU is the server process's user + system time (psutil) across
an action; wall is from the click to the run's end. Two fresh servers, so that nothing is cached yet:

* **alone**: opening the KV-cache tab on SmolLM2, "Time 32 tokens with and without the cache", "Rank the heads" on
  /llm (270 ablations), and another student's new prompt on /llm with nothing else running;
* **meanwhile**: student A clicks "Rank the heads" (zero); 1 s later student B types a new prompt on /llm (the
  page's wall time), then clicks "Rank the heads" (mean) while A's still runs. Wall times of A's and B's rankings:
  with turns (ui/shell/long_actions.py) B's waits for A's; before, both ran at once on the one core.

Prints a markdown table per part.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "deploy"), str(HERE.parent / "tests")]

PROMPT_B = "The teacher wrote a long sentence on the board and the students copied it"


@contextlib.contextmanager
def server(root: Path, cpu: int):
    """A fresh ``streamlit run app.py`` of ``root`` on one core; yields (url, psutil.Process)."""
    import psutil
    from browser_utils import streamlit_process
    from run_local import REPLICA_ENV

    # its output unread for minutes: to DEVNULL, where a pipe would fill and stall the server
    with streamlit_process(root, REPLICA_ENV, output=subprocess.DEVNULL) as (url, proc):
        os.sched_setaffinity(proc.pid, {cpu})
        yield url, psutil.Process(proc.pid)


def _cpu(process) -> float:
    t = process.cpu_times()
    return t.user + t.system


async def _session(url: str, query: str, page: str):
    from st_session import StreamlitSession

    s = StreamlitSession(url)
    await s.connect()
    await _ok(s.rerun(query, page=page))
    return s


async def _ok(run):
    done = await run
    assert done.status == "FINISHED_SUCCESSFULLY" and not done.exceptions, (done.status, done.exceptions)
    return done


async def _click(s, key: str, value=True):
    label = s.label_of(key)
    assert label is not None, f"no widget {key!r} on the page"
    return await _ok(s.rerun(widget_states=[(label, value)]))


async def alone(url: str, process, quick: bool) -> list[tuple[str, float, float]]:
    rows = []

    async def measure(name, action):
        cpu, start = _cpu(process), time.perf_counter()
        await action
        rows.append((name, _cpu(process) - cpu, time.perf_counter() - start))

    await _session(url, "", "llm")  # warm: SmolLM2 loaded, the IOI prompt's run
    await measure("open the KV-cache tab on SmolLM2 (nothing cached)", _session(
        url, urllib.parse.urlencode({"section": "KV cache", "model": "smollm2"}), "modern"))
    if quick:
        return rows
    kv = await _session(url, urllib.parse.urlencode({"section": "KV cache", "model": "smollm2"}), "modern")
    await measure("Time 32 tokens with and without the cache", _click(kv, "modern_time_smollm2"))
    llm = await _session(url, "", "llm")
    await measure("Rank the heads on /llm (270 ablations)", _click(llm, "llm_rank_button"))
    b = await _session(url, urllib.parse.urlencode({"prompt": PROMPT_B + " (alone)"}), "llm")
    await measure("another student types a new prompt on /llm, nothing else running", _click(b, "llm_prompt", PROMPT_B))
    return rows


async def meanwhile(url: str) -> list[tuple[str, float]]:
    a = await _session(url, "", "llm")
    # B ranks with the mean ablation: its own ranking, not A's (the same one would wait for A's in the cache)
    b = await _session(url, urllib.parse.urlencode({"prompt": PROMPT_B + " (meanwhile)", "ablate_mode": "mean"}), "llm")
    walls = {}

    async def timed(name, action):
        start = time.perf_counter()
        await action
        walls[name] = time.perf_counter() - start

    ranking = asyncio.create_task(timed("A: Rank the heads (zero)", _click(a, "llm_rank_button")))
    await asyncio.sleep(1.0)
    await timed("B: types a new prompt on /llm 1 s into A's ranking", _click(b, "llm_prompt", PROMPT_B))
    await timed("B: Rank the heads (mean), clicked while A's runs", _click(b, "llm_rank_button"))
    await ranking
    return list(walls.items())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=HERE.parent, help="the app's checkout (default: this one)")
    parser.add_argument("--quick", action="store_true", help="the KV-cache tab alone (CI checks that it runs)")
    parser.add_argument("--part", choices=("alone", "meanwhile", "both"), default="both")
    args = parser.parse_args(argv)
    try:
        from transformer_core.models.smollm2 import load_smollm2

        load_smollm2()
    except Exception as err:  # noqa: BLE001  (SmolLM2Unavailable, or gguf missing)
        print(f"SmolLM2 is not installed ({err}); nothing to measure")
        return 0
    cpu = min(os.sched_getaffinity(0))
    if args.part != "meanwhile" or args.quick:
        with server(args.root.resolve(), cpu) as (url, process):
            rows = asyncio.run(alone(url, process, args.quick))
        print("\n## alone (one core)\n\n| action | server CPU (s) | wall (s) |\n|---|---:|---:|")
        for name, used, wall in rows:
            print(f"| {name} | {used:.2f} | {wall:.2f} |")
    if args.quick or args.part == "alone":
        return 0
    with server(args.root.resolve(), cpu) as (url, _process):
        walls = asyncio.run(meanwhile(url))
    print("\n## meanwhile (one core)\n\n| what | wall (s) |\n|---|---:|")
    for name, wall in walls:
        print(f"| {name} | {wall:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
