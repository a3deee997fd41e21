"""MiniLM-L6 forward: ours with every stage captured vs Hugging Face's eager BertModel.

Same input ids on both sides (batch 1, no padding), at 16, 128 and 512 tokens (512 is
BERT's longest input). Ours runs under :func:`~transformer_core.nn.hooks.capture`, which
copies every stage of every layer (q, k, v, scores, masked scores, weights, context, …);
Hugging Face runs with ``attn_implementation="eager"`` and ``output_attentions=True``, the
closest it has to "show me the attention". A column without capture shows what the
copies cost.

Usage::

    python benchmarks/bench_minilm.py            # 30 timed runs per cell
    python benchmarks/bench_minilm.py --quick    # CI: 16 tokens, 1 timed run, no warm-up

Prints a markdown table of medians (milliseconds) and the ratio of medians.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from transformer_core.nn.hooks import capture  # noqa: E402
from transformer_core.models.minilm import MAX_POSITIONS, load_minilm, model_dir  # noqa: E402
from cli_args import positive  # noqa: E402  (benchmarks/, beside this script)

LENGTHS = (16, 128, MAX_POSITIONS)
TEXT = ("Attention lets every token look at every other token of the sentence, weigh how relevant "
        "each one is, and mix their values into a new vector. ")


def make_ids(tokenizer, n_tokens: int) -> torch.Tensor:
    """``[1, n_tokens]`` ids: ``[CLS]`` + WordPiece of a repeated text, cut, + ``[SEP]``."""
    pieces = tokenizer.encode(TEXT, add_special_tokens=False).ids
    body = (pieces * (n_tokens // len(pieces) + 1))[: n_tokens - 2]
    ids = [tokenizer.token_to_id("[CLS]"), *body, tokenizer.token_to_id("[SEP]")]
    assert len(ids) == n_tokens
    return torch.tensor([ids])


def median_ms(fns: list, repeats: int, warmup: int) -> list[float]:
    """Median wall time of each function in ms; the functions take turns, so drifts in
    machine load hit all of them alike."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, bucket in zip(fns, times):
            start = time.perf_counter()
            fn()
            bucket.append(time.perf_counter() - start)
    return [statistics.median(t) * 1e3 for t in times]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI (checks that it runs): 16 tokens, 1 timed run, "
                                                             "no warm-up")
    parser.add_argument("--repeats", type=positive, default=None, help="timed runs per cell")
    parser.add_argument("--threads", type=positive, default=None,
                        help="torch intra-op threads (default: torch's choice); 1 is steadier on a busy machine")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    repeats = args.repeats or (1 if args.quick else 30)
    warmup = 0 if args.quick else 3

    from transformers import BertModel

    model, tokenizer = load_minilm()
    hf = BertModel.from_pretrained(model_dir(), attn_implementation="eager").eval()

    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    rows = []
    with torch.no_grad():
        for n in LENGTHS[:1] if args.quick else LENGTHS:
            ids = make_ids(tokenizer, n)
            attention_mask = torch.ones_like(ids)

            def ours_captured():
                with capture(model) as stages:
                    model(ids, attention_mask)
                return stages

            def ours_plain():
                return model(ids, attention_mask)

            def reference():
                return hf(input_ids=ids, attention_mask=attention_mask, output_attentions=True)

            # sanity: same numbers, and every stage was captured
            stages = ours_captured()
            ref = reference()
            err = max((stages[f"layers.{i}.attention.weights"] - a).abs().max().item()
                      for i, a in enumerate(ref.attentions))
            err = max(err, (ours_plain() - ref.last_hidden_state).abs().max().item())
            t_ours, t_hf, t_plain = median_ms([ours_captured, reference, ours_plain], repeats, warmup)
            rows.append((n, t_ours, t_hf, t_ours / t_hf, t_plain, len(stages), err))

    print(f"MiniLM-L6 forward, batch 1, CPU, torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"median of {repeats} runs after {warmup} warm-up, load average before {load_before}\n")
    print("| tokens | ours, all stages captured (ms) | HF eager + output_attentions (ms) | ratio ours/HF "
          "| ours, no capture (ms) | stages captured | max abs diff vs HF |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n, t_ours, t_hf, ratio, t_plain, n_stages, err in rows:
        print(f"| {n} | {t_ours:.2f} | {t_hf:.2f} | {ratio:.2f} | {t_plain:.2f} | {n_stages} | {err:.1e} |")


if __name__ == "__main__":
    main()
