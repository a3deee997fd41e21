"""Attention since 2017, timed: a KV-cache step against recomputing the prefix, and the online softmax against
the plain computation.

1. SmolLM2-135M: the next token's logits with a KV cache of 64 and 512 positions (one new query row per layer)
   vs running the whole prefix again (what generation costs without a cache).
2. One attention head (d_head 64, causal mask) at 128, 512 and 2,048 tokens: the package's plain computation
   (the whole score and weight matrices), the tiled online softmax (64 × 64 tiles, a Python loop over tiles) and
   torch's fused ``F.scaled_dot_product_attention``; with the working memory each holds at most, counted from the
   arrays it keeps (:func:`~transformer_core.nn.online_softmax.plain_peak_bytes`, ``tiled_peak_bytes``), not
   measured.

Usage::

    python benchmarks/bench_modern.py            # 20 timed runs per cell
    python benchmarks/bench_modern.py --quick    # CI: the shortest length of each table, 1 timed run, no warm-up;
                                                 # SmolLM2 skipped when its package is missing

Prints markdown tables of medians (milliseconds) and ratios of medians.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from transformer_core.nn.masks import causal_mask  # noqa: E402
from transformer_core.nn.online_softmax import (online_attention, plain_attention, plain_peak_bytes,  # noqa: E402
                                                tiled_peak_bytes)
from cli_args import positive  # noqa: E402  (benchmarks/, beside this script)

CACHE_LENGTHS = (64, 512)
HEAD_LENGTHS = (128, 512, 2048)
BLOCK = 64
D_HEAD = 64


def median_ms(fns: list, repeats: int, warmup: int = 1) -> list[float]:
    """Median wall time of each function in ms; the functions take turns, so drifts in load hit all alike."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, bucket in zip(fns, times):
            start = time.perf_counter()
            fn()
            bucket.append((time.perf_counter() - start) * 1000)
    return [statistics.median(t) for t in times]


def kv_cache_table(repeats: int, lengths=CACHE_LENGTHS, warmup: int = 1) -> list[str]:
    from transformer_core.models.gguf_weights import SmolLM2Unavailable
    from transformer_core.models.smollm2 import load_smollm2
    from transformer_core.analysis.shared_kv import kv_bytes_per_token
    from transformer_core.nn.gqa import KVCache

    try:
        model, _ = load_smollm2()
    except SmolLM2Unavailable as err:
        return [f"SmolLM2 skipped: {err}"]
    lines = ["| cached tokens | cached step (ms) | whole prefix again (ms) | ratio | cache holds (bytes, float32) |",
             "|---:|---:|---:|---:|---:|"]
    generator = torch.Generator().manual_seed(0)
    for n in lengths:
        ids = torch.randint(100, 40000, (1, n + 1), generator=generator)
        cache = KVCache(model.config.n_layers)
        with torch.no_grad():
            model(ids[:, :n], cache)  # fill the cache with n positions
            held = sum(k.numel() + v.numel() for k, v in zip(cache.keys, cache.values)) * 4  # float32 bytes
            assert held == kv_bytes_per_token(model.config.n_layers, model.config.n_kv_heads, model.config.d_head) * n

            def cached_step():
                cache.length = n  # every timed step starts from the same n rows
                for i in range(model.config.n_layers):
                    cache.keys[i], cache.values[i] = cache.keys[i][:, :, :n], cache.values[i][:, :, :n]
                return model(ids[:, n:], cache, last_only=True)

            def recompute():
                return model(ids, last_only=True)

            fast, slow = median_ms([cached_step, recompute], repeats, warmup)
        lines.append(f"| {n} | {fast:.1f} | {slow:.1f} | {slow / fast:.1f}× | {held:,} |")
    return lines


def online_table(repeats: int, lengths=HEAD_LENGTHS, warmup: int = 1) -> list[str]:
    lines = ["| tokens | plain (ms) | online softmax, 64×64 tiles (ms) | torch fused (ms) | online / plain | "
             "plain holds (bytes) | tiles hold (bytes) | tiles skipped |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    generator = torch.Generator().manual_seed(1)
    for n in lengths:
        q, k, v = (torch.randn(n, D_HEAD, generator=generator) for _ in range(3))
        mask = causal_mask(n)
        result = online_attention(q, k, v, mask, block_q=BLOCK, block_k=BLOCK)
        assert torch.allclose(result.output, plain_attention(q, k, v, mask), atol=1e-4)
        plain, tiled, fused = median_ms([
            lambda: plain_attention(q, k, v, mask),
            lambda: online_attention(q, k, v, mask, block_q=BLOCK, block_k=BLOCK),
            lambda: F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=True)], repeats, warmup)
        total = result.tiles_computed + result.tiles_skipped
        lines.append(f"| {n:,} | {plain:.2f} | {tiled:.2f} | {fused:.2f} | {tiled / plain:.1f}× | "
                     f"{plain_peak_bytes(n, n):,} | {tiled_peak_bytes(n, n, D_HEAD, BLOCK, BLOCK):,} | "
                     f"{result.tiles_skipped} of {total} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI (checks that it runs): the shortest length of "
                                                             "each table, 1 timed run, no warm-up")
    parser.add_argument("--repeats", type=positive, default=20, help="timed runs per cell (default 20)")
    parser.add_argument("--threads", type=positive, default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    warmup = 0 if args.quick else 1
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), median of {repeats} runs\n")
    print("KV cache, SmolLM2-135M: the next token's logits\n")
    print("\n".join(kv_cache_table(repeats, CACHE_LENGTHS[:1] if args.quick else CACHE_LENGTHS, warmup)))
    print("\nOne head, d_head 64, causal mask: plain vs online softmax\n")
    print("\n".join(online_table(repeats, HEAD_LENGTHS[:1] if args.quick else HEAD_LENGTHS, warmup)))


if __name__ == "__main__":
    main()
