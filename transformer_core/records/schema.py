"""The schema of a trace JSON document, checked in one step before anything is built from it.

:func:`check_document` turns any inconsistent, hostile or oversized document into one
``ValueError`` whose message says what is wrong in plain words: types; valid Unicode;
``lengths``, ``truncated``, ``mask`` and every stage's shape consistent with the tokens
(batch, positions), with each other (:func:`check_relations`: heads; q/k share d_head, v/context
share d_v; concat = heads × d_v; one d_model) and with :class:`Limits`; then every number
(:mod:`transformer_core.records.values`: finite float32, −inf only where the mask blocks, weights
rows that are distributions). The layout itself is described in
:mod:`transformer_core.records.serialize`. Pure Python and NumPy; a small explicit check, no
schema library.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .trace import PATTERN_STAGES
from .values import check_numbers, to_float64

HEAD_DIM_STAGES = ("q", "k", "v", "context")  # [batch, head, pos, d_k]
ROW_STAGES = ("concat", "projected", "output")  # [batch, pos, features]
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
    size_bytes: int = 2_000_000_000  # UTF-8 bytes of the JSON text
    digits: int = 30  # digits of one whole number (Python refuses to read more than 4,300)


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
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} is {value}, not a whole number")
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


def check_document(doc: object, limits: Limits = Limits(),
                   required: tuple[str, ...] = ("weights",)) -> dict[str, np.ndarray]:
    """Raise ``ValueError`` with one clear message unless ``doc`` (parsed JSON) is a consistent trace.

    ``required`` names attention stages that layer 0 must hold (``"weights"`` gives the head count).
    The ``format`` field is checked by :func:`transformer_core.records.serialize.trace_from_json`.
    Returns every stage as a float32 array (capture name → array), read once and checked.
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
    shapes = _check_stages(doc["stages"], n_batch, n_pos, limits, required)
    check_relations(shapes)
    blocked = None if doc["mask"] is None else ~np.array(doc["mask"], dtype=bool)  # [batch, 1, query_pos|1, key_pos]
    return {name: check_numbers(name, to_float64(name, doc["stages"][name]["data"], shape), blocked)
            for name, shape in shapes.items()}


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


def _check_stages(stages: object, n_batch: int, n_pos: int, limits: Limits,
                  required: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """Each stage's own shape against the tokens and limits; returns name → shape."""
    if not isinstance(stages, dict):
        raise ValueError(f"'stages' must be an object, not {_kind(stages)}")
    total, heads, shapes = 0, None, {}
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
        if name == "token_loss":  # [batch, pos − 1]: the causal model's loss predicting each next token
            for i, size in enumerate(shape):
                _whole(size, f"dimension {i} of stage {name!r}", 0, limits.numbers)
            if shape != [n_batch, n_pos - 1]:
                raise ValueError(f"stage 'token_loss' has shape {shape}; for {n_batch}×{n_pos} tokens it must be "
                                 f"{[n_batch, n_pos - 1]}")
            shapes[name] = tuple(shape)
            continue
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
            heads = (name, shape) if heads is None else heads
            if shape[1] != heads[1][1]:
                raise ValueError(f"stage {name!r} has shape {shape} and {heads[0]!r} has {heads[1]}: every "
                                 "attention stage has the same number of heads (dimension 1)")
            if shape[1] > limits.heads:
                raise ValueError(f"stage {name!r} has {shape[1]} heads; at most {limits.heads} can be shown")
        pos = shape[2] if len(shape) == 4 else shape[1]
        if pos != n_pos or (short in PATTERN_STAGES and shape[-1] != n_pos):
            want = f"[{n_batch}, heads, {n_pos}, {n_pos if short in PATTERN_STAGES else 'd_k'}]" if len(shape) == 4 \
                else f"[{n_batch}, {n_pos}, features]"
            raise ValueError(f"stage {name!r} has shape {shape}; for {n_batch}×{n_pos} tokens it must be {want}")
        if short in PATTERN_STAGES + HEAD_DIM_STAGES and ".attention." in name and len(shape) != 4:
            raise ValueError(f"stage {name!r} must have 4 dimensions [batch, head, pos, ·]")
        if short in ROW_STAGES and ".attention." in name and len(shape) != 3:
            raise ValueError(f"stage {name!r} must have 3 dimensions [batch, pos, features]")
        if shape[-1] > limits.width:
            raise ValueError(f"stage {name!r} has {shape[-1]:,} columns; at most {limits.width:,} can be shown")
        shapes[name] = tuple(shape)
    for short in required:
        if f"layers.0.attention.{short}" not in stages:
            raise ValueError(f"it has no stage 'layers.0.attention.{short}'")
    return shapes


def check_relations(shapes: dict[str, tuple[int, ...]]) -> None:
    """The shape relations between stages (each stage already fits the tokens on its own).

    Per layer ``layers.{i}.attention.``: ``q`` and ``k`` share d_head, ``v`` and ``context`` share d_v
    (``[batch, head, pos, ·]``); ``concat`` is ``[batch, pos, heads × d_v]``. Across the trace, one
    d_model: ``embeddings``, every ``attention.projected``/``attention.output`` and ``feed_forward.output``
    (``[batch, pos, d_model]``). The head count is checked by :func:`check_document` already.

    Raises:
        ValueError: naming the stage, its shape, the stage it disagrees with and that one's shape.
    """
    def differ(name: str, other: str, rule: str) -> ValueError:
        return ValueError(f"stage {name!r} has shape {list(shapes[name])} and {other!r} has {list(shapes[other])}: "
                          f"{rule}")

    model_width = None
    for name in shapes:
        prefix, short = name.rsplit(".", 1) if "." in name else ("", name)
        if prefix.endswith(".attention"):
            if short == "k" and (q := f"{prefix}.q") in shapes and shapes[q][-1] != shapes[name][-1]:
                raise differ(name, q, "queries and keys must share d_head (the last dimension)")
            if short == "context" and (v := f"{prefix}.v") in shapes and shapes[v][-1] != shapes[name][-1]:
                raise differ(name, v, "values and context must share d_v (the last dimension)")
            if short == "concat":
                per_head = next((f"{prefix}.{s}" for s in ("context", "v") if f"{prefix}.{s}" in shapes), None)
                if per_head is not None:
                    b, h, pos, d_v = shapes[per_head]
                    if shapes[name][-1] != h * d_v:
                        raise differ(name, per_head, f"concat must be [batch, pos, heads × d_v] = {[b, pos, h * d_v]}")
        if name == "embeddings" or name.endswith((".attention.projected", ".attention.output",
                                                  ".feed_forward.output")):
            if model_width is None:
                model_width = name
            elif shapes[name][-1] != shapes[model_width][-1]:
                raise differ(name, model_width, "the embeddings, attention outputs and feed-forward outputs must "
                                                "share d_model (the last dimension)")
