"""Argument types shared by the benchmark scripts: a bad value is one argparse line and exit 2, not a traceback
after minutes of setup."""
from __future__ import annotations

import argparse


def positive(text: str) -> int:
    """A whole number ≥ 1 (repeats, threads)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def token_count(text: str) -> int:
    """A MiniLM input length: 2 ([CLS] and [SEP]) to 512 tokens."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 2 <= value <= 512:
        raise argparse.ArgumentTypeError(f"must be 2 to 512 tokens ([CLS] and [SEP] included), got {value}")
    return value


def seconds(text: str) -> float:
    """A time in seconds, 0 or more (and finite)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 s or more, got {text}")
    return value


def some_seconds(text: str) -> float:
    """A time in seconds, more than 0 (a run's length)."""
    value = seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be more than 0 s")
    return value
