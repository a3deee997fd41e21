"""The schema of a trace JSON document, checked in one step before anything is built from it.

:func:`check_document` turns any inconsistent, hostile or oversized document into one
``ValueError`` whose message says what is wrong in plain words: types; valid Unicode;
``lengths``, ``truncated``, ``mask`` and every stage's shape consistent with the tokens
(batch, positions) and with each other (heads); and :class:`Limits` on sentences, tokens,
heads, layers, widths and numbers. The layout itself is described in
:mod:`transformer_core.records.serialize`. Pure Python and NumPy; a small explicit check, no
schema library.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .trace import PATTERN_STAGES

HEAD_DIM_STAGES = ("q", "k", "v", "context")  # [batch, head, pos, d_k]
SETTING_TYPES = {"model": str, "name": str, "tokenizer": str, "activation": str, "causal": bool, "padding": bool,
                 "d_model": int, "n_heads": int, "n_layers": int, "d_ff": int, "seed": int, "max_tokens": int,
                 "dropout": float, "layer_norm_eps": float}
_STAGE_NAME = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*")
_LAYER = re.compile(r"layers\.(\d{1,4})\.")
_NAME_CHARS, _SETTING_CHARS, _MAX_SETTINGS = 100, 200, 64


@dataclass(frozen=True)
class Limits:
    """What a document may hold (defaults: what the export command can write; the app passes its own)."""

    sentences: int = 64
    tokens: int = 512  # positions per sentence, padding included
    heads: int = 64
    layers: int = 24
    width: int = 8192  # feature columns of a stage (d_model, d_ff, d_k)
    numbers: int = 100_000_000  # floats over all stages
    token_chars: int = 1000  # characters of one token
    chars: int = 2_000_000_000  # characters of the JSON text


def _where_text(value: object, where: str, limit: int) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where} must be text, not {_kind(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{where} is not valid Unicode (it holds a lone surrogate such as \\ud800)") from None
    if len(value) > limit:
        raise ValueError(f"{where} has {len(value):,} characters; at most {limit:,} are allowed")
    return value


def _n(count: int, one: str, many: str | None = None) -> str:
    """``"1 token"``, ``"3 tokens"``."""
    return f"{count} {one if count == 1 else many or one + 's'}"


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _whole(value: object, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where} must be a whole number, not {_kind(value)}")
    if not low <= value <= high:
        raise ValueError(f"{where} is {value}; it must be between {low} and {high:,}")
    return value


def _list(value: object, where: str, length: int | None = None) -> list:
    if not isinstance(value, list):
        raise ValueError(f"{where} must be a list, not {_kind(value)}")
    if length is not None and len(value) != length:
        raise ValueError(f"{where} has {_n(len(value), 'entry', 'entries')} for {_n(length, 'sentence')}")
    return value


def check_document(doc: object, limits: Limits = Limits(), required: tuple[str, ...] = ("weights",)) -> None:
    """Raise ``ValueError`` with one clear message unless ``doc`` (parsed JSON) is a consistent trace.

    ``required`` names attention stages that layer 0 must hold (``"weights"`` gives the head count).
    The ``format`` field is checked by :func:`transformer_core.records.serialize.trace_from_json`.
    """
    if not isinstance(doc, dict):
        raise ValueError(f"a trace is a JSON object, not {_kind(doc)}")
    for key in ("tokens", "lengths", "truncated", "mask", "stages"):
        if key not in doc:
            raise ValueError(f"the {key!r} field is missing")
    n_batch, n_pos = _check_tokens(doc["tokens"], limits)
    for b, n in enumerate(_list(doc["lengths"], "'lengths'", n_batch)):
        _whole(n, f"lengths[{b}]", 0, n_pos)
    if not any(doc["lengths"]):
        raise ValueError("it has no tokens: every length is 0")
    for b, cut in enumerate(_list(doc["truncated"], "'truncated'", n_batch)):
        if not isinstance(cut, bool):
            raise ValueError(f"truncated[{b}] must be true or false, not {_kind(cut)}")
    _check_mask(doc["mask"], n_batch, n_pos)
    _check_settings(doc.get("settings"))
    _check_stages(doc["stages"], n_batch, n_pos, limits, required)


def _check_tokens(tokens: object, limits: Limits) -> tuple[int, int]:
    _list(tokens, "'tokens'")
    if not tokens:
        raise ValueError("it has no sentences ('tokens' is empty)")
    if len(tokens) > limits.sentences:
        raise ValueError(f"it has {len(tokens)} sentences; at most {limits.sentences} can be shown")
    n_pos = len(_list(tokens[0], "sentence 0 of 'tokens'"))
    for b, row in enumerate(tokens):
        if len(_list(row, f"sentence {b} of 'tokens'")) != n_pos:
            raise ValueError(f"sentence {b} has {_n(len(row), 'token')} and sentence 0 has {n_pos}: every sentence "
                             "of a trace is padded to the same length")
        for i, token in enumerate(row):
            _where_text(token, f"token {i} of sentence {b}", limits.token_chars)
    if not 1 <= n_pos <= limits.tokens:
        raise ValueError(f"its sentences have {n_pos} tokens; from 1 to {limits.tokens} can be shown")
    return len(tokens), n_pos


def _check_mask(mask: object, n_batch: int, n_pos: int) -> None:
    if mask is None:
        return
    _list(mask, "'mask'")
    try:
        array = np.asarray(mask)
    except (ValueError, TypeError, OverflowError, RecursionError):
        raise ValueError("'mask' is not a rectangular array of true/false") from None
    shapes = [(n_batch, 1, n_pos, n_pos), (n_batch, 1, 1, n_pos)]
    if array.dtype != bool:
        raise ValueError("'mask' must hold only true and false")
    if array.shape not in shapes:
        raise ValueError(f"'mask' has shape {list(array.shape)}; for {n_batch}×{n_pos} tokens it must be "
                         f"{list(shapes[0])} (or {list(shapes[1])}: key columns only)")


def _check_settings(settings: object) -> None:
    if settings is None:
        return
    if not isinstance(settings, dict):
        raise ValueError(f"'settings' must be an object, not {_kind(settings)}")
    if len(settings) > _MAX_SETTINGS:
        raise ValueError(f"'settings' has {len(settings)} entries; at most {_MAX_SETTINGS} are allowed")
    for key, value in settings.items():
        _where_text(key, "a settings name", _NAME_CHARS)
        where = f"setting {key!r}"
        expected = SETTING_TYPES.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            _where_text(value, where, _SETTING_CHARS)
        elif isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{where} is {value}, not a finite number")
        elif not isinstance(value, (bool, int, float)):
            raise ValueError(f"{where} must be text, a number or true/false, not {_kind(value)}")
        if expected is bool and not isinstance(value, bool):
            raise ValueError(f"{where} must be true or false, not {_kind(value)}")
        if expected is int and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"{where} must be a whole number ≥ 0")
        if expected is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError(f"{where} must be a number, not {_kind(value)}")
        if expected is str and not isinstance(value, str):
            raise ValueError(f"{where} must be text, not {_kind(value)}")


def _check_stages(stages: object, n_batch: int, n_pos: int, limits: Limits, required: tuple[str, ...]) -> None:
    if not isinstance(stages, dict):
        raise ValueError(f"'stages' must be an object, not {_kind(stages)}")
    total, heads = 0, None
    for name, entry in stages.items():
        _where_text(name, "a stage name", _NAME_CHARS)
        if not _STAGE_NAME.fullmatch(name):
            raise ValueError(f"stage name {name!r} is not of the form layers.0.attention.weights")
        if (layer := _LAYER.match(name)) and int(layer.group(1)) >= limits.layers:
            raise ValueError(f"stage {name!r}: at most {limits.layers} layers can be shown")
        if not isinstance(entry, dict) or "shape" not in entry or "data" not in entry:
            raise ValueError(f"stage {name!r} must be an object with 'shape' and 'data'")
        if entry.get("dtype", "float32") != "float32":
            raise ValueError(f"stage {name!r}: dtype must be 'float32'")
        shape = _list(entry["shape"], f"the shape of stage {name!r}")
        if len(shape) not in (3, 4):
            raise ValueError(f"stage {name!r} has {len(shape)} dimensions; a stage has 3 [batch, pos, features] "
                             "or 4 [batch, head, pos, ·]")
        for i, size in enumerate(shape):
            _whole(size, f"dimension {i} of stage {name!r}", 1, limits.numbers)
        total += math.prod(shape)
        if total > limits.numbers:
            raise ValueError(f"its stages hold more than {limits.numbers:,} numbers, more than can be shown")
        short = name.rsplit(".", 1)[-1]
        if shape[0] != n_batch:
            raise ValueError(f"stage {name!r} has {shape[0]} sentences and 'tokens' has {n_batch}")
        if len(shape) == 4:
            heads = shape[1] if heads is None else heads
            if shape[1] != heads:
                raise ValueError(f"stage {name!r} has {shape[1]} heads and another stage has {heads}")
            if heads > limits.heads:
                raise ValueError(f"stage {name!r} has {heads} heads; at most {limits.heads} can be shown")
        pos = shape[2] if len(shape) == 4 else shape[1]
        if pos != n_pos or (short in PATTERN_STAGES and shape[-1] != n_pos):
            want = f"[{n_batch}, heads, {n_pos}, {n_pos if short in PATTERN_STAGES else 'd_k'}]" if len(shape) == 4 \
                else f"[{n_batch}, {n_pos}, features]"
            raise ValueError(f"stage {name!r} has shape {shape}; for {n_batch}×{n_pos} tokens it must be {want}")
        if short in PATTERN_STAGES + HEAD_DIM_STAGES and ".attention." in name and len(shape) != 4:
            raise ValueError(f"stage {name!r} must have 4 dimensions [batch, head, pos, ·]")
        if shape[-1] > limits.width:
            raise ValueError(f"stage {name!r} has {shape[-1]:,} columns; at most {limits.width:,} can be shown")
    for short in required:
        if f"layers.0.attention.{short}" not in stages:
            raise ValueError(f"it has no stage 'layers.0.attention.{short}'")
