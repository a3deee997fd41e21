"""Train the causal model of :mod:`transformer_core.models.causal`, reproducibly, on CPU.

    python -m transformer_core.models.train_causal            # train, print loss curve and head scores
    python -m transformer_core.models.train_causal --write    # ... and rewrite the committed weights + log

Task (Olsson et al., "In-context Learning and Induction Heads", 2022; Elhage et al., "A Mathematical
Framework for Transformer Circuits", 2021): each step draws a period ``p`` in ``PERIODS`` and a batch
of ``p`` uniform random tokens repeated to ``LENGTH`` positions; loss = next-token cross-entropy at
every position. Only the repeats are predictable, and only by an induction head.

Reproducible: every draw (initial weights, periods, tokens) comes from local ``torch.Generator``
objects seeded from ``config.seed``; training runs on one thread with deterministic algorithms, so
the same seed gives the same loss curve (bit for bit on one machine and torch build; the test allows
1e-4 relative between machines). Checkpoints at :data:`CHECKPOINT_STEPS` go into one safetensors file.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import torch

from .causal import (CAUSAL_CONFIG, TRAINING_LOG_PATH, WEIGHTS_PATH, CausalConfig, CausalLM, config_dict,
                     head_scores, repeated_tokens, sha256_of, token_losses)

STEPS = 4000
BATCH = 32
LENGTH = 48
PERIODS = (4, 24)  # inclusive range of the repeat period
LR = 1e-3
CHECKPOINT_STEPS = (0, 200, 300, 400, 500, 600, 800, 1000, 1500, 2000, 3000, 4000)


def _progress(step: int, total: int, loss: float, start: float) -> None:
    width = 30
    done = int(width * step / total)
    sys.stderr.write(f"\r[{'#' * done}{'.' * (width - done)}] {step}/{total} loss {loss:.3f} "
                     f"{time.perf_counter() - start:5.1f}s")
    sys.stderr.flush()


def train(config: CausalConfig = CAUSAL_CONFIG, steps: int = STEPS, *, batch: int = BATCH,
          checkpoint_steps=CHECKPOINT_STEPS, progress: bool = True) -> dict:
    """Train from ``config.seed``; returns ``{"losses": [per step], "checkpoints": {step: state_dict}, "seconds"}``.

    ``steps`` may be smaller than :data:`STEPS` (the test trains a few steps): the first losses
    are the same as those of a full run.
    """
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        model = CausalLM(config).train()
        data = torch.Generator().manual_seed(config.seed + 1)
        optimizer = torch.optim.Adam(model.parameters(), lr=LR)
        losses, checkpoints = [], {}
        start = time.perf_counter()
        for step in range(steps + 1):
            if step in checkpoint_steps or step == steps:  # the final model is always kept
                checkpoints[step] = {k: v.detach().clone() for k, v in model.state_dict().items()}
            if step == steps:
                break
            period = int(torch.randint(PERIODS[0], PERIODS[1] + 1, (), generator=data))
            ids = repeated_tokens(batch, period, LENGTH, config.vocab_size, data)
            loss = token_losses(model(ids), ids).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
            if progress and (step % 10 == 0 or step == steps - 1):
                _progress(step + 1, steps, losses[-1], start)
        if progress:
            sys.stderr.write("\n")
        return {"losses": losses, "checkpoints": checkpoints, "seconds": time.perf_counter() - start}
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


def write(result: dict, config: CausalConfig, weights_path: Path = WEIGHTS_PATH,
          log_path: Path = TRAINING_LOG_PATH) -> str:
    """Save every checkpoint (``step_{n}.<name>``) to one safetensors file and the log; return its SHA-256."""
    from safetensors.torch import save_file

    steps = sorted(result["checkpoints"])
    tensors = {f"step_{s}.{k}": v.contiguous() for s in steps for k, v in result["checkpoints"][s].items()}
    weights_path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(weights_path), metadata={"config": json.dumps(config_dict(config)),
                                                    "checkpoint_steps": json.dumps(steps)})
    digest = sha256_of(weights_path)
    scores = {}
    for s in steps:
        model = CausalLM(config)
        model.load_state_dict(result["checkpoints"][s])
        scores[str(s)] = head_scores(model.eval())
    log = {"config": config_dict(config), "steps": len(result["losses"]), "batch": BATCH, "length": LENGTH,
           "periods": list(PERIODS), "lr": LR, "checkpoint_steps": steps, "seconds": round(result["seconds"], 1),
           "sha256": digest, "losses": result["losses"], "scores": scores}
    log_path.write_text(json.dumps(log, indent=1) + "\n")
    source = Path(__file__).with_name("causal.py")
    text = source.read_text()
    source.write_text(re.sub(r'WEIGHTS_SHA256 = "[0-9a-f]{64}"', f'WEIGHTS_SHA256 = "{digest}"', text))
    return digest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--write", action="store_true",
                        help="rewrite the committed weights, training log and WEIGHTS_SHA256")
    args = parser.parse_args(argv)
    config = CAUSAL_CONFIG
    result = train(config, args.steps)
    losses = result["losses"]
    print(f"trained {args.steps} steps in {result['seconds']:.1f} s (1 thread)")
    print("loss curve (mean of each 1/10):")
    chunk = max(1, len(losses) // 10)
    for i in range(0, len(losses), chunk):
        part = losses[i:i + chunk]
        print(f"  steps {i:5d}–{i + len(part) - 1:5d}: {sum(part) / len(part):.3f}")
    final = CausalLM(config)
    final.load_state_dict(result["checkpoints"][max(result["checkpoints"])])
    scores = head_scores(final.eval())
    for name in ("previous_token", "induction"):
        for layer, row in enumerate(scores[name]):
            print(f"{name:>14} L{layer}: " + " ".join(f"H{h}={v:.2f}" for h, v in enumerate(row)))
    print(f"in-context loss: first period {scores['loss']['first']:.3f}, repeats {scores['loss']['repeat']:.3f}")
    if args.write:
        digest = write(result, config)
        print(f"wrote {WEIGHTS_PATH} ({WEIGHTS_PATH.stat().st_size / 1e6:.2f} MB, SHA-256 {digest})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
