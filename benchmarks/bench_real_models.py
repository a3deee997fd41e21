"""Server CPU per whole-script run on the real-model pages (SmolLM2 on /llm and the modern tabs), one student, warm
model: what a class competes for.

    python benchmarks/bench_real_models.py              # 5 repeats per action
    python benchmarks/bench_real_models.py --quick      # CI: 1 repeat, no ranking; skipped without SmolLM2

Each action runs the app in Streamlit's AppTest (the same script a server runs) and reads the process's CPU time
(``time.process_time``: user + system of every thread) across the one run. The model is loaded before timing. A
first visit clears the page caches first; a new prompt is one nobody has asked for yet; a click keeps the caches
(what the page computed for this input). The SmolLM2 forward calls of each run are counted beside (whole-model runs; a
run of one block from a cached residual is counted apart as a block run).

Reference in the same run: one plain cached greedy generation of the KV-cache tab's 32 tokens
(``timed_greedy``'s cached half), the goal's yardstick for the tab's first visit.

Prints a markdown table: action, median CPU seconds, forward calls per run, goal.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

PROMPTS = ["When Mary and John went to the store, John gave a drink to",
           "The teacher wrote a long sentence on the board and the students copied it",
           "After the rain stopped, the children ran outside to play in the park",
           "A small dog barked at the mailman while the cat slept on the warm sofa",
           "The scientist explained the result to the committee before the vote",
           "My grandmother baked bread every Sunday morning for the whole family"]


class Counter:
    """Counts SmolLM2 whole-model forwards and single-block runs (forward pre-hooks on the shared model)."""

    def __init__(self, model):
        self.model, self.forwards, self.blocks = model, 0, 0
        self._handles = [model.register_forward_pre_hook(self._forward)]

    def _forward(self, *_):
        self.forwards += 1

    def close(self):
        for h in self._handles:
            h.remove()


def timed(fn, counter) -> tuple[float, int]:
    before = counter.forwards
    start = time.process_time()
    fn()
    return time.process_time() - start, counter.forwards - before


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="1 repeat, no ranking (CI checks that it runs)")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else max(1, args.repeats)
    try:
        from transformer_core.models.smollm2 import load_smollm2

        model, tokenizer = load_smollm2()
    except Exception as err:  # noqa: BLE001  (SmolLM2Unavailable, or gguf missing)
        print(f"SmolLM2 is not installed ({err}); nothing to measure")
        return 0
    import torch

    torch.set_num_threads(1)  # one replica serves one core
    from apptest_utils import new_app

    from transformer_core.models.smollm2 import encode
    from ui.modern import compute as modern
    from ui.shell import cache

    counter = Counter(model)
    rows = []

    def record(name, goal, fns):
        results = [timed(fn, counter) for fn in fns]
        cpu = statistics.median(r[0] for r in results)
        calls = statistics.median(r[1] for r in results)
        rows.append((name, cpu, calls, goal))
        print(f"{name}: {cpu:.3f} s, {calls:g} forwards", flush=True)

    # /llm: a new prompt (caches cleared), then clicks on it
    def open_llm(prompt):
        def run():
            at = new_app(prompt=prompt)
            at.switch_page("pages/llm.py").run()
            assert not at.exception, [e.message for e in at.exception]
            state["at"] = at
        return run

    state = {}
    open_llm(PROMPTS[0])()  # warm imports; the IOI prompt's summary (the ablation section's) stays cached

    def click(key, value):
        def run():
            at = state["at"]
            at.session_state[key] = value
            at.run()
            assert not at.exception, [e.message for e in at.exception]
        return run

    record("/llm new prompt (~14 tokens, typed on the open page)", "≤ 0.5 s",
           [click("llm_prompt", PROMPTS[1 + i % (len(PROMPTS) - 1)]) for i in range(repeats)])
    record("/llm another layer's head", "≤ 0.15 s", [click("llm_layer", 3 + i) for i in range(repeats)])
    record("/llm a stage", "≤ 0.1 s", [click("llm_stage", s) for s in (["scores", "weights"] * repeats)[:repeats]])

    # what the heads write: the lens box and the routes box opened on a prompt already open, then a threshold step
    def opened(box):
        results = []
        for i in range(repeats):
            click("llm_prompt", PROMPTS[1 + (i + 2) % (len(PROMPTS) - 1)] + " again")()  # untimed: a new prompt
            results.append(timed(click(box, True), counter))
            click(box, False)()
        return results

    for box, name, goal in (("llm_lens_box", "/llm open the logit lens (31 rows × 14 positions)", "≤ 0.6 s"),
                            ("llm_routes_box", "/llm open the information-flow routes", "≤ 1 model run")):
        results = opened(box)
        rows.append((name, statistics.median(r[0] for r in results), statistics.median(r[1] for r in results), goal))
        print(f"{name}: {rows[-1][1]:.3f} s, {rows[-1][2]:g} forwards", flush=True)
    click("llm_routes_box", True)()
    record("/llm a routes threshold step", "≤ 0.2 s",
           [click("llm_threshold", t) for t in ([0.1, 0.04] * repeats)[:repeats]])
    click("llm_routes_box", False)()

    # the KV-cache tab on SmolLM2, first visit (caches cleared) and a step change
    def open_tab(section, **query):
        def run():
            at = new_app(section=section, **query)
            at.switch_page("pages/modern.py").run()
            assert not at.exception, [e.message for e in at.exception]
            state["at"] = at
        return run

    ids = encode(modern.SMOLLM2_PROMPT, tokenizer)[0]
    with torch.no_grad():
        plain = [timed(lambda: _cached_greedy(model, ids, modern.N_NEW), counter) for _ in range(repeats)]
    rows.append(("(reference) a plain cached generation of the tab's 32 tokens",
                 statistics.median(p[0] for p in plain), statistics.median(p[1] for p in plain), ""))
    record("KV cache tab, SmolLM2, first visit", "≤ 1.2 × the reference",
           [open_tab("KV cache", model="smollm2") for _ in range(repeats)])
    record("KV cache tab, a step change", "≤ 0.3 s", [click("modern_step", 2 + i) for i in range(repeats)])

    open_tab("Long inputs")()
    record("Long inputs, one slider step", "≤ 0.5 s", [click("modern_window", 2 + i) for i in range(repeats)])

    from ui.llm import compute as llm

    def rank():
        cache.clear_all()
        llm.ranked(llm.DEFAULT, "zero", "ioi")
    if not args.quick:  # the ranking is 270 ablated runs (10 s of CPU): CI checks only that the script runs
        record("Rank the 270 heads (zero ablation)", "≤ 10 s", [rank for _ in range(min(repeats, 2))])
    counter.close()

    print("\n| action | server CPU per run (median) | SmolLM2 forwards per run | goal |\n|---|---|---|---|")
    for name, cpu, calls, goal in rows:
        print(f"| {name} | {cpu:.3f} s | {calls:g} | {goal} |")
    return 0


def _cached_greedy(model, ids, n_new):
    """Greedy generation with the KV cache, nothing recorded (the reference)."""
    import torch

    from transformer_core.nn.gqa import KVCache

    cache, new = KVCache(model.config.n_layers), list(ids)
    for _ in range(n_new):
        new = [int(model(torch.tensor([new]), cache, last_only=True)[0, -1].argmax())]


if __name__ == "__main__":
    sys.exit(main())
