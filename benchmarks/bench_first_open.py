"""A page's first open on a fresh server: the server's CPU and memory, as the first student of a class pays them.

    python benchmarks/bench_first_open.py                          # /causal, 4 fresh servers
    python benchmarks/bench_first_open.py --compare /tmp/old       # this checkout and another, server by server
    python benchmarks/bench_first_open.py --quick                  # CI: one server (checks that the script runs)

Each round starts a fresh ``streamlit run app.py`` with the replicas' environment (``deploy/run_local.REPLICA_ENV``:
one PyTorch thread), opens the explorer in one session (Python, PyTorch and the app's imports are then loaded, as on a
server someone has used), then opens the page in a new session and reads, with psutil, the server's CPU time (user +
system) across that run and its RSS after it; then a second new session opens the page on another input (another
visitor, the process warm). Driven through Streamlit's own protocol (``benchmarks/st_session.py``): server side only.
With ``--compare``, the checkouts alternate round by round, so a change in the machine's load hits both.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "deploy"), str(ROOT / "tests")]

from browser_utils import streamlit_process
from cli_args import positive
from run_local import REPLICA_ENV
from st_session import StreamlitSession

# page → (its path, the query string of the second visitor's other input, words its last section shows in English)
PAGES = {"causal": ("causal", "seq_seed=7", b"knock heads out")}


def cpu_s(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


async def _open(url: str, proc: psutil.Process, page: str, query: str, shown: bytes) -> tuple[float, float, list[str]]:
    """One new session opening ``page``: ``(server CPU s, RSS MB after, exceptions shown or "not drawn")``."""
    s = StreamlitSession(url)
    await s.connect()
    try:
        before = cpu_s(proc)
        run = await s.rerun(query, page=page)
        drawn = shown in run.payload  # the whole page ran, down to its last section
        return cpu_s(proc) - before, proc.memory_info().rss / 2**20, run.exceptions or ([] if drawn else ["not drawn"])
    finally:
        await s.close()


async def _round(url: str, proc: psutil.Process, page: str, other: str, shown: bytes) -> dict:
    warm = StreamlitSession(url)
    await warm.connect()
    await warm.rerun("", page="")  # the explorer: imports loaded, the page itself never run
    await warm.close()
    return {"first": await _open(url, proc, page, "", shown), "other": await _open(url, proc, page, other, shown)}


def measure(tree: Path, page: str, other: str, shown: bytes) -> dict:
    with streamlit_process(tree, env=REPLICA_ENV, output=subprocess.DEVNULL) as (url, server):
        out = asyncio.run(_round(url, psutil.Process(server.pid), page, other, shown))
    for name, (_cpu, _rss, errors) in out.items():
        if errors:
            sys.exit(f"{tree}: the page showed an exception ({name}): {errors[0][:300]}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", choices=sorted(PAGES), default="causal")
    parser.add_argument("--rounds", type=positive, default=4, help="fresh servers per checkout (median)")
    parser.add_argument("--compare", type=Path, metavar="CHECKOUT", help="another checkout, measured alternately")
    parser.add_argument("--quick", action="store_true", help="one server, this checkout only, for CI")
    args = parser.parse_args()
    if args.compare is not None and not (args.compare / "app.py").is_file():
        parser.error(f"--compare: no app.py in {args.compare}")
    trees = [ROOT] if args.quick or args.compare is None else [args.compare, ROOT]
    rounds = 1 if args.quick else args.rounds
    page, other, shown = PAGES[args.page]
    results: dict[Path, list[dict]] = {tree: [] for tree in trees}
    loads = [psutil.getloadavg()[0]]
    start = time.time()
    for _round_number in range(rounds):
        for tree in trees:
            results[tree].append(measure(tree, page, other, shown))
            loads.append(psutil.getloadavg()[0])
    print(f"\n/{page}, fresh server per round, median of {rounds} (load {min(loads):.1f}–{max(loads):.1f}, "
          f"{time.time() - start:.0f} s)\n")
    print("| checkout | first open: server CPU (s) | RSS after (MB) | another input, warm: server CPU (s) | every first "
          "open's CPU (s) |")
    print("|---|---:|---:|---:|---|")
    for tree, runs in results.items():
        first = [r["first"][0] for r in runs]
        print(f"| {'this' if tree == ROOT else tree} | {statistics.median(first):.2f} | "
              f"{statistics.median(r['first'][1] for r in runs):.0f} | "
              f"{statistics.median(r['other'][0] for r in runs):.2f} | {', '.join(f'{c:.2f}' for c in first)} |")


if __name__ == "__main__":
    main()
