""""Rank the heads" on MiniLM-L6: the 72 single-head ablations, batched one layer's heads per forward pass
(:func:`transformer_core.analysis.ablation.embedding.rank_heads`) vs one ablated forward pass per head, and
one intact forward pass for scale. Same sentences, same process; both give the same cosines (checked).

Usage::

    python benchmarks/bench_ablation.py            # 5 timed runs per cell
    python benchmarks/bench_ablation.py --quick    # CI: 1 timed run, short batch only

Prints a markdown table of medians (seconds) and the ratio.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from transformer_core.analysis.ablation import ablate  # noqa: E402
from transformer_core.analysis.ablation.embedding import inputs_of, rank_heads, sentence_embeddings  # noqa: E402
from transformer_core.models.minilm import load_minilm  # noqa: E402
from transformer_core.models.minilm_trace import run_minilm  # noqa: E402
from cli_args import positive  # noqa: E402  (benchmarks/, beside this script)

BATCHES = {
    "2 sentences, 11 + 18 tokens": ["a teacher explains attention to the whole class",
                                    "After a long day at the busy harbour, the old fisherman finally sat down to rest."],
    "6 sentences, up to 64 tokens": [" ".join(["attention lets every token look at every other token"] * k)[:300]
                                     for k in (1, 2, 3, 4, 5, 6)],
}


def one_at_a_time(sentences: list[str]) -> np.ndarray:
    """The same 72 cosines, one ablated forward pass per head."""
    trace = run_minilm(sentences, only=lambda name: False)
    model, _ = load_minilm()
    ids, mask, real = inputs_of(trace, True)
    with torch.no_grad():
        base = sentence_embeddings(model(ids, mask), real)
        out = np.zeros((6, 12, len(sentences)), np.float32)
        for layer in range(6):
            for head in range(12):
                with ablate(model, [(layer, head)]):
                    out[layer, head] = (sentence_embeddings(model(ids, mask), real) * base).sum(-1).numpy()
    return out


def timed(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=positive, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    repeats = 1 if args.quick else 5
    load_minilm()
    print(f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}, median of {repeats}")
    print("| batch | rank_heads, batched (s) | one pass per head (s) | ratio | max cosine diff |")
    print("|---|---:|---:|---:|---:|")
    for name, sentences in list(BATCHES.items())[:1 if args.quick else None]:
        if not args.quick:  # CI checks only that it runs
            rank_heads(sentences)  # warm-up
        t_batched, ranked = timed(lambda: rank_heads(sentences), repeats)
        t_single, single = timed(lambda: one_at_a_time(sentences), repeats)
        diff = float(np.abs(ranked["cosine"] - single).max())
        print(f"| {name} | {t_batched:.2f} | {t_single:.2f} | {t_batched / t_single:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
