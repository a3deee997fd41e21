"""Memory and time of the largest legal input through every MiniLM view, on a real server.

    python benchmarks/bench_memory.py            # 6 lines × 510 Chinese characters: 6 × 512 MiniLM tokens
    python benchmarks/bench_memory.py --quick    # CI: 2 short lines (checks that the script runs)
    python benchmarks/bench_memory.py --together 2   # then 2 students open every view at once, on new sentences

A fresh ``streamlit run app.py`` with the replicas' environment (``deploy/run_local.REPLICA_ENV``: one PyTorch
thread), driven through Streamlit's own protocol (``benchmarks/st_session.py``, no browser: server side only).
The views are opened in turn by their links, each adding to the one before, as a student clicks through them:
the default view, ``stage=norms``, ``view=rollout`` with a token pair, then a head-type colour. The caches are
shared, so later steps reuse what earlier ones computed, as in one session. The server's RSS is sampled every
20 ms with psutil: the table gives the RSS before each step, its peak during the step and the step's time.
"Rank the heads" is not run (it has its own per-pass budget and runs under the same slot; see docs/deploy.md).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "deploy")]

from run_local import REPLICA_ENV  # noqa: E402
from st_session import StreamlitSession  # noqa: E402

CHARS = "我们今天学习注意力机制老师在课堂上讲解模型如何把每个词和其他词联系起来"  # one MiniLM token each


def largest_text(lines: int = 6, per_line: int = 510) -> str:
    """``lines`` lines of ``per_line`` Chinese characters: 510 + [CLS] + [SEP] = 512 MiniLM tokens a line,
    3,065 characters with the line breaks (under the 4,000-character cap)."""
    row = (CHARS * (per_line // len(CHARS) + 1))[:per_line]
    return "\n".join(row for _ in range(lines))


STEPS = [("default view", {}),
         ("+ stage=norms", {"stage": "norms"}),
         ("+ view=rollout, pair=1,2", {"stage": "norms", "view": "rollout", "pair": "1,2"}),
         ("+ color=previous_token", {"stage": "norms", "view": "rollout", "pair": "1,2", "color": "previous_token"})]


class Peak:
    """The peak RSS of a process, sampled in a thread."""

    def __init__(self, pid: int):
        import psutil

        self.proc, self.peak, self._stop = psutil.Process(pid), 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        return self.proc.memory_info().rss

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.rss())
            time.sleep(0.02)

    def __enter__(self):
        self.peak = self.rss()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.rss())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server() -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.headless", "true", "--browser.gatherUsageStats", "false"],
                            cwd=ROOT, env={**os.environ, **REPLICA_ENV}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("streamlit server did not become healthy")


NOTES = {b"another student's large computation is running": "waited for the slot",
         b"for memory:": "waited for memory", b"memory is full": "REFUSED: memory", b"still busy": "REFUSED: busy"}


async def open_link(url: str, query: dict, page: str) -> tuple[float, list[str]]:
    """The run's seconds, and its exceptions followed by the notes of ui/shell/heavy.py it showed."""
    s = StreamlitSession(url)
    await s.connect()
    try:
        run = await s.rerun(urllib.parse.urlencode(query), page=page, timeout=900)
    finally:
        await s.close()
    return run.seconds, run.exceptions + [note for text, note in NOTES.items() if text in run.payload]


def together(url: str, pid: int, text: str, extra: dict, n: int) -> None:
    """``n`` students open ``extra``'s views at once, each on its own variant of ``text`` (nothing cached is
    shared): their peak RSS together, and each one's time."""
    async def all_of_them():
        variants = [text.replace(CHARS[0], CHARS[1 + i], 1) for i in range(n)]  # same size, new sentences
        return await asyncio.gather(*(open_link(url, {"text": v, **extra}, "minilm") for v in variants))

    with Peak(pid) as p:
        before = p.peak
        runs = asyncio.run(all_of_them())
    mb = 1 << 20
    print(f"| {n} students at once, every view | {before / mb:,.0f} | {p.peak / mb:,.0f} | "
          f"{' / '.join(f'{s:.1f}' for s, _ in runs)} | {'; '.join(e for _, es in runs for e in es)[:200] or 'none'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two short lines, for CI")
    parser.add_argument("--together", type=int, default=0, metavar="N",
                        help="after the steps, N students open every view at once, each on sentences of its own")
    args = parser.parse_args()
    text = largest_text(2, 20) if args.quick else largest_text()
    steps = STEPS[:2] if args.quick else STEPS
    proc, url = start_server()
    mb = 1 << 20
    try:
        with Peak(proc.pid) as warm:  # the models load and every later step starts from a warm server
            seconds, errors = asyncio.run(open_link(url, {"text": "the cat sat on the mat"}, "minilm"))
        print(f"warm-up (MiniLM loaded, one short sentence): {seconds:.1f} s, RSS {warm.rss() / mb:,.0f} MB, "
              f"peak {warm.peak / mb:,.0f} MB")
        lines = text.splitlines()
        print(f"input: {len(lines)} lines × {len(lines[0])} characters = {len(text):,} characters")
        print("| step | RSS before (MB) | peak (MB) | run (s) | errors, waits |")
        print("|---|---:|---:|---:|---|")
        for name, extra in steps:
            with Peak(proc.pid) as p:
                before = p.peak
                seconds, said = asyncio.run(open_link(url, {"text": text, **extra}, "minilm"))
            print(f"| {name} | {before / mb:,.0f} | {p.peak / mb:,.0f} | {seconds:.1f} | "
                  f"{'; '.join(said)[:200] or 'none'} |")
            if errors := [e for e in said if e not in NOTES.values()]:
                sys.exit(f"the page showed an exception: {errors[0][:300]}")
        if args.together:
            together(url, proc.pid, text, steps[-1][1], args.together)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
