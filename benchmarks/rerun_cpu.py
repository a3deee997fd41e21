"""Server CPU per interaction: one Streamlit replica, one session, each typical click repeated.

    python benchmarks/rerun_cpu.py                 # every interaction, 8 repeats each
    python benchmarks/rerun_cpu.py --repeats 3

Starts ``streamlit run app.py`` on a free port (no nginx), opens one session with
benchmarks/st_session.py (Streamlit's websocket protocol) and, for each interaction in
``INTERACTIONS``, does it ``--repeats`` times, alternating values so every repeat is a real change.
For each it prints the median server CPU milliseconds (user + system time of the Streamlit process
across the rerun, read with psutil) and the median bytes sent. CPU, not wall time: what a class
of students competes for. A new session ("open") is measured with a fresh websocket each repeat.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "deploy"), str(ROOT / "benchmarks")]

import run_local  # noqa: E402
from st_session import StreamlitSession  # noqa: E402
from cli_args import positive  # noqa: E402  (benchmarks/, beside this script)

TEXT = "the cat sat on the mat because it was tired\nthe dog sat on the river bank"
WORDS = ["cat", "dog", "sat", "on", "the", "mat", "river", "bank", "tired", "street", "a", "was"]


def cpu_s(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def sentence(i: int) -> str:
    return " ".join(WORDS[(i + j) % len(WORDS)] for j in range(9)) + f" {i}"


# name -> (page to be on, widget label or None, values to cycle through)
INTERACTIONS = [
    ("explorer: toggle causal mask", "", "Causal mask", [True, False]),
    ("explorer: toggle padding mask", "", "Padding mask", [False, True]),
    ("explorer: pick a head", "", "Head", [1, 2, 3, 0]),
    ("explorer: all heads large", "", "All heads large", [True, False]),  # (the 0–1 toggle became ?scale=)
    ("explorer: change n_heads", "", "n_heads", [1, 2, 0]),  # indices into the options
    ("explorer: type a new sentence", "", "Sentences (one per line)", None),
    ("minilm: pick a layer", "minilm", "Layer", [1, 2, 3, 0]),
    ("minilm: pick a head", "minilm", "Head", [1, 2, 3, 0]),
    ("minilm: type a new sentence", "minilm", "Sentences (one per line)", None),
    ("switch page → minilm", "minilm", None, None),
    ("switch page → masks lab", "masks_lab", None, None),
    ("switch page → pipeline", "pipeline", None, None),
    ("switch page → explorer", "", None, None),
]


async def measure(url: str, proc: psutil.Process, repeats: int) -> list[tuple[str, float, float]]:
    rows = []
    # a new session: page open with the default sentences
    cpu, size = [], []
    for _ in range(repeats):
        s = StreamlitSession(url)
        await s.connect()
        c0 = cpu_s(proc)
        run = await s.rerun(urllib.parse.urlencode({"text": TEXT}))
        cpu.append(cpu_s(proc) - c0)
        size.append(len(run.payload))
        await s.close()
    rows.append(("open a new session (explorer)", statistics.median(cpu), statistics.median(size)))

    s = StreamlitSession(url)
    await s.connect()
    await s.rerun(urllib.parse.urlencode({"text": TEXT}))
    counter = 0
    for name, page, label, values in INTERACTIONS:
        target = s.pages.get(page, "")
        if label is not None and s.page_hash != target:
            await s.rerun(page=page)
        cpu, size = [], []
        for i in range(repeats):
            kwargs: dict = {}
            if label is None:  # page switch: go away first (not measured), then come back
                away = "pipeline" if page != "pipeline" else ""
                await s.rerun(page=away)
                kwargs["page"] = page
            elif values is None:
                counter += 1
                kwargs["widget_states"] = [(label, sentence(counter))]
            else:
                kind, proto = s.widgets[label]
                value = values[i % len(values)]
                if kind == "selectbox" and isinstance(value, int) and not isinstance(value, bool):
                    value = list(proto.options)[value % len(proto.options)]
                kwargs["widget_states"] = [(label, value)]
            c0 = cpu_s(proc)
            run = await s.rerun(**kwargs)
            cpu.append(cpu_s(proc) - c0)
            size.append(len(run.payload))
            if run.exceptions or run.status not in ("FINISHED_SUCCESSFULLY", "FINISHED_FRAGMENT_RUN_SUCCESSFULLY"):
                print(f"  ! {name}: {run.status} {run.exceptions[:1]}", flush=True)
        rows.append((name, statistics.median(cpu), statistics.median(size)))
        print(f"{name:40s} {1000 * rows[-1][1]:7.0f} ms CPU  {rows[-1][2] / 1e3:8.0f} kB", flush=True)
    await s.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=positive, default=8)
    args = ap.parse_args()
    port = run_local.free_port()
    log = open(Path("/tmp") / f"rerun_cpu_{port}.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        run_local.wait_until(lambda: run_local.healthy(url + "/_stcore/health"), 120, "streamlit",
                             dead=lambda: server.poll() is not None)
        proc = psutil.Process(server.pid)

        async def warm_then_measure():
            w = StreamlitSession(url)  # warm-up: torch import, MiniLM load, lesson caches
            await w.connect()
            await w.rerun(urllib.parse.urlencode({"text": TEXT}))
            for page in ("minilm", "masks_lab", "pipeline", "causal", ""):
                await w.rerun(page=page)
            await w.close()
            return await measure(url, proc, args.repeats)

        t0 = time.time()
        rows = asyncio.run(warm_then_measure())
        print(f"\n| interaction | server CPU (ms, median of {args.repeats}) | sent (kB) |\n|---|---|---|")
        for name, cpu, size in rows:
            print(f"| {name} | {1000 * cpu:.0f} | {size / 1e3:.0f} |")
        print(f"\n({time.time() - t0:.0f} s; load average {psutil.getloadavg()[0]:.1f})")
    finally:
        server.terminate()
        server.wait(20)


if __name__ == "__main__":
    main()
