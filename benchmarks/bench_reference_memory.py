"""Memory of a pasted mean-ablation reference set on MiniLM, in one process, as the page computes it.

    python benchmarks/bench_reference_memory.py            # 48 and 200 lines of 510 Chinese characters, 40 edits
    python benchmarks/bench_reference_memory.py --quick    # CI: 3 lines and 3 edits, no wait for expiry

Each set goes the page's way (``ui/minilm/ablation.py``): cut to its budget (``fit_reference``), then
``ablation_effects`` with ``mode="mean"`` on "a teacher explains attention", ablating L3H7. The RSS is sampled every
5 ms with psutil; the table gives the RSS before, the peak during, and the time. Then 40 distinct one-line edits of
the set, each a new reference set, and the RSS after them and after the reference cache's entries expired
(``REFERENCE_TTL_S`` + 1 s idle, then the sweep an idle server's cache thread makes).
"""
from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

CHARS = "我们今天学习注意力机制老师在课堂上讲解模型如何把每个词和其他词联系起来"  # one MiniLM token each


def zh_lines(lines: int, per_line: int = 510) -> list[str]:
    """``lines`` lines of ``per_line`` Chinese characters (510 + [CLS] + [SEP] = 512 tokens), distinct per count."""
    chars = CHARS[lines % len(CHARS):] + CHARS[:lines % len(CHARS)]
    row = (chars * (per_line // len(chars) + 1))[:per_line]
    return [row] * lines


class Peak:
    """The peak RSS of this process while the block runs, sampled every 5 ms in a thread."""

    def __init__(self):
        import psutil

        self.proc, self.peak, self._stop = psutil.Process(), 0, threading.Event()

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(0.005)

    def __enter__(self):
        self.peak = self.proc.memory_info().rss
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)


def mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    import psutil
    import torch

    torch.set_num_threads(1)  # as a replica runs (deploy/run_local.REPLICA_ENV)
    from transformer_core.analysis import ablation
    from transformer_core.analysis.ablation.embedding import ablation_effects
    from transformer_core.analysis.ablation.embedding_reference import fit_reference
    from ui.shell.cache import release_free_memory

    proc = psutil.Process()
    sentence = ["a teacher explains attention"]
    ablation_effects(sentence, [(3, 7)], mode="mean")  # the model loaded, the default set's means made
    release_free_memory()
    print(f"idle, MiniLM loaded: {mb(proc.memory_info().rss)}")
    print("| reference set | kept | tokens | RSS before | peak RSS | time |\n|---|---|---|---|---|---|")
    for n in ([3] if args.quick else [48, 200]):
        fit = fit_reference(zh_lines(n))
        before = proc.memory_info().rss
        start = time.perf_counter()
        with Peak() as peak:
            ablation_effects(sentence, [(3, 7)], mode="mean", reference=fit.sentences)
        print(f"| {n} × 510 Chinese characters | {len(fit.sentences)} | {fit.tokens:,} | {mb(before)} | "
              f"{mb(peak.peak)} | {time.perf_counter() - start:.1f} s |")
        release_free_memory()
    edits = 3 if args.quick else 40
    base = list(fit_reference(zh_lines(48)).sentences)
    before = proc.memory_info().rss
    for i in range(edits):  # each a distinct set: its last line edited
        edited = base[:-1] + [base[-1][:-len(str(i))] + str(i)]
        ablation_effects(sentence, [(3, 7)], mode="mean", reference=tuple(edited))
    release_free_memory()
    after = proc.memory_info().rss
    info = ablation.expire_references()
    print(f"\n{edits} distinct edits: RSS {mb(before)} → {mb(after)}; reference cache {info['entries']} entries, "
          f"{mb(info['bytes'])} of {mb(info['budget'])}")
    if not args.quick:
        time.sleep(ablation.REFERENCE_TTL_S + 1)
        info = ablation.expire_references()
        release_free_memory()
        print(f"after {ablation.REFERENCE_TTL_S + 1:.0f} s idle: RSS {mb(proc.memory_info().rss)}; reference cache "
              f"{info['entries']} entries, {mb(info['bytes'])}")


if __name__ == "__main__":
    main()
