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

from ..text.i18n import _, ngettext
from .trace import PATTERN_STAGES
from .values import check_numbers, json_kind as _kind, to_float64

HEAD_DIM_STAGES = ("q", "k", "v", "context")  # [batch, head, pos, d_k]
ROW_STAGES = ("concat", "projected", "output")  # [batch, pos, features]
SETTING_TYPES = {"model": str, "name": str, "tokenizer": str, "activation": str, "causal": bool, "padding": bool,
                 "d_model": int, "n_heads": int, "n_layers": int, "d_ff": int, "seed": int, "max_tokens": int,
                 "dropout": float, "layer_norm_eps": float, "n_kv_heads": int, "window": int, "sinks": int}
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
        raise ValueError(_("{where} must be text, not {kind}").format(where=where, kind=_kind(value)))
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(_("{where} is not valid Unicode (it holds a lone surrogate such as \\ud800)").format(
            where=where)) from None
    if len(value) > limit:
        raise ValueError(_("{where} has {n} characters; at most {limit} are allowed").format(
            where=where, n=f"{len(value):,}", limit=f"{limit:,}"))
    return value


def _whole(value: object, where: str, low: int, high: int) -> int:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(_("{where} is {value}, not a whole number").format(where=where, value=value))
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(_("{where} must be a whole number, not {kind}").format(where=where, kind=_kind(value)))
    if not low <= value <= high:
        raise ValueError(_("{where} is {value}; it must be between {low} and {high}").format(
            where=where, value=value, low=low, high=f"{high:,}"))
    return value


def _list(value: object, where: str, length: int | None = None) -> list:
    if not isinstance(value, list):
        raise ValueError(_("{where} must be a list, not {kind}").format(where=where, kind=_kind(value)))
    if length is not None and len(value) != length:
        raise ValueError(_("{where} has {entries} for {sentences}").format(
            where=where, entries=ngettext("{n} entry", "{n} entries", len(value)).format(n=len(value)),
            sentences=ngettext("{n} sentence", "{n} sentences", length).format(n=length)))
    return value


def check_document(doc: object, limits: Limits = Limits(),
                   required: tuple[str, ...] = ("weights",)) -> dict[str, np.ndarray]:
    """Raise ``ValueError`` with one clear message unless ``doc`` (parsed JSON) is a consistent trace.

    ``required`` names attention stages that layer 0 must hold (``"weights"`` gives the head count).
    The ``format`` field is checked by :func:`transformer_core.records.serialize.trace_from_json`.
    Returns every stage as a float32 array (capture name → array), read once and checked.
    """
    if not isinstance(doc, dict):
        raise ValueError(_("a trace is a JSON object, not {kind}").format(kind=_kind(doc)))
    for key in ("tokens", "lengths", "truncated", "mask", "stages"):
        if key not in doc:
            raise ValueError(_("the {key!r} field is missing").format(key=key))
    n_batch, n_pos = _check_tokens(doc["tokens"], limits)
    for b, n in enumerate(_list(doc["lengths"], "'lengths'", n_batch)):
        _whole(n, f"lengths[{b}]", 0, n_pos)
    if not any(doc["lengths"]):
        raise ValueError(_("it has no tokens: every length is 0"))
    for b, cut in enumerate(_list(doc["truncated"], "'truncated'", n_batch)):
        if not isinstance(cut, bool):
            raise ValueError(_("{where} must be true or false, not {kind}").format(where=f"truncated[{b}]", kind=_kind(cut)))
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
        raise ValueError(_("it has no sentences ('tokens' is empty)"))
    if len(tokens) > limits.sentences:
        raise ValueError(_("it has {n} sentences; at most {limit} can be shown").format(n=len(tokens), limit=limits.sentences))
    n_pos = len(_list(tokens[0], _("sentence {b} of 'tokens'").format(b=0)))
    for b, row in enumerate(tokens):
        if len(_list(row, _("sentence {b} of 'tokens'").format(b=b))) != n_pos:
            raise ValueError(_("sentence {b} has {tokens} and sentence 0 has {n_pos}: every sentence of a trace is "
                               "padded to the same length").format(
                b=b, tokens=ngettext("{n} token", "{n} tokens", len(row)).format(n=len(row)), n_pos=n_pos))
        for i, token in enumerate(row):
            _where_text(token, _("token {i} of sentence {b}").format(i=i, b=b), limits.token_chars)
    if not 1 <= n_pos <= limits.tokens:
        raise ValueError(_("its sentences have {n} tokens; from 1 to {limit} can be shown").format(n=n_pos, limit=limits.tokens))
    return len(tokens), n_pos


def _check_mask(mask: object, n_batch: int, n_pos: int) -> None:
    if mask is None:
        return
    _list(mask, "'mask'")
    try:
        array = np.asarray(mask)
    except (ValueError, TypeError, OverflowError, RecursionError):
        raise ValueError(_("'mask' is not a rectangular array of true/false")) from None
    shapes = [(n_batch, 1, n_pos, n_pos), (n_batch, 1, 1, n_pos)]
    if array.dtype != bool:
        raise ValueError(_("'mask' must hold only true and false"))
    if array.shape not in shapes:
        raise ValueError(_("'mask' has shape {shape}; for {n_batch}×{n_pos} tokens it must be {full} (or {keys}: key "
                           "columns only)").format(shape=list(array.shape), n_batch=n_batch, n_pos=n_pos,
                                                   full=list(shapes[0]), keys=list(shapes[1])))


def _check_settings(settings: object) -> None:
    if settings is None:
        return
    if not isinstance(settings, dict):
        raise ValueError(_("'settings' must be an object, not {kind}").format(kind=_kind(settings)))
    if len(settings) > _MAX_SETTINGS:
        raise ValueError(_("'settings' has {n} entries; at most {limit} are allowed").format(
            n=len(settings), limit=_MAX_SETTINGS))
    for key, value in settings.items():
        _where_text(key, _("a settings name"), _NAME_CHARS)
        where = _("setting {key!r}").format(key=key)
        expected = SETTING_TYPES.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            _where_text(value, where, _SETTING_CHARS)
        elif isinstance(value, float) and not math.isfinite(value):
            raise ValueError(_("{where} is {value}, not a finite number").format(where=where, value=value))
        elif not isinstance(value, (bool, int, float)):
            raise ValueError(_("{where} must be text, a number or true/false, not {kind}").format(where=where,
                                                                                              kind=_kind(value)))
        if expected is bool and not isinstance(value, bool):
            raise ValueError(_("{where} must be true or false, not {kind}").format(where=where, kind=_kind(value)))
        if expected is int and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(_("{where} must be a whole number ≥ 0").format(where=where))
        if expected is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError(_("{where} must be a number, not {kind}").format(where=where, kind=_kind(value)))
        if expected is str and not isinstance(value, str):
            raise ValueError(_("{where} must be text, not {kind}").format(where=where, kind=_kind(value)))


def _check_stages(stages: object, n_batch: int, n_pos: int, limits: Limits,
                  required: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """Each stage's own shape against the tokens and limits; returns name → shape."""
    if not isinstance(stages, dict):
        raise ValueError(_("'stages' must be an object, not {kind}").format(kind=_kind(stages)))
    total, heads, shapes = 0, None, {}
    for name, entry in stages.items():
        _where_text(name, _("a stage name"), _NAME_CHARS)
        if not _STAGE_NAME.fullmatch(name):
            raise ValueError(_("stage name {name!r} is not of the form layers.0.attention.weights").format(name=name))
        if (layer := _LAYER.match(name)) and int(layer.group(1)) >= limits.layers:
            raise ValueError(_("stage {name!r}: at most {limit} layers can be shown").format(name=name, limit=limits.layers))
        if not isinstance(entry, dict) or "shape" not in entry or "data" not in entry:
            raise ValueError(_("stage {name!r} must be an object with 'shape' and 'data'").format(name=name))
        if entry.get("dtype", "float32") != "float32":
            raise ValueError(_("stage {name!r}: dtype must be 'float32'").format(name=name))
        shape = _list(entry["shape"], _("the shape of stage {name!r}").format(name=name))
        if name == "token_loss":  # [batch, pos − 1]: the causal model's loss predicting each next token
            for i, size in enumerate(shape):
                _whole(size, _("dimension {i} of stage {name!r}").format(i=i, name=name), 0, limits.numbers)
            if shape != [n_batch, n_pos - 1]:
                raise ValueError(_("stage {name!r} has shape {shape}; for {n_batch}×{n_pos} tokens it must be {want}").format(
                    name=name, shape=shape, n_batch=n_batch, n_pos=n_pos, want=[n_batch, n_pos - 1]))
            shapes[name] = tuple(shape)
            continue
        if len(shape) not in (3, 4):
            raise ValueError(_("stage {name!r} has {n} dimensions; a stage has 3 [batch, pos, features] or 4 [batch, "
                               "head, pos, ·]").format(name=name, n=len(shape)))
        for i, size in enumerate(shape):
            _whole(size, _("dimension {i} of stage {name!r}").format(i=i, name=name), 1, limits.numbers)
        total += math.prod(shape)
        if total > limits.numbers:
            raise ValueError(_("its stages hold more than {limit} numbers, more than can be shown").format(
                limit=f"{limits.numbers:,}"))
        short = name.rsplit(".", 1)[-1]
        if shape[0] != n_batch:
            raise ValueError(_("stage {name!r} has {n} sentences and 'tokens' has {n_batch}").format(
                name=name, n=shape[0], n_batch=n_batch))
        if len(shape) == 4:
            heads = (name, shape) if heads is None else heads
            if shape[1] != heads[1][1]:
                raise ValueError(_("stage {name!r} has shape {shape} and {other!r} has {other_shape}: every attention "
                                   "stage has the same number of heads (dimension 1)").format(
                    name=name, shape=shape, other=heads[0], other_shape=heads[1]))
            if shape[1] > limits.heads:
                raise ValueError(_("stage {name!r} has {n} heads; at most {limit} can be shown").format(
                    name=name, n=shape[1], limit=limits.heads))
        pos = shape[2] if len(shape) == 4 else shape[1]
        if pos != n_pos or (short in PATTERN_STAGES and shape[-1] != n_pos):
            want = f"[{n_batch}, heads, {n_pos}, {n_pos if short in PATTERN_STAGES else 'd_k'}]" if len(shape) == 4 \
                else f"[{n_batch}, {n_pos}, features]"
            raise ValueError(_("stage {name!r} has shape {shape}; for {n_batch}×{n_pos} tokens it must be {want}").format(
                name=name, shape=shape, n_batch=n_batch, n_pos=n_pos, want=want))
        if short in PATTERN_STAGES + HEAD_DIM_STAGES and ".attention." in name and len(shape) != 4:
            raise ValueError(_("stage {name!r} must have 4 dimensions [batch, head, pos, ·]").format(name=name))
        if short in ROW_STAGES and ".attention." in name and len(shape) != 3:
            raise ValueError(_("stage {name!r} must have 3 dimensions [batch, pos, features]").format(name=name))
        if shape[-1] > limits.width:
            raise ValueError(_("stage {name!r} has {n} columns; at most {limit} can be shown").format(
                name=name, n=f"{shape[-1]:,}", limit=f"{limits.width:,}"))
        shapes[name] = tuple(shape)
    for short in required:
        if f"layers.0.attention.{short}" not in stages:
            raise ValueError(_("it has no stage {name!r}").format(name=f"layers.0.attention.{short}"))
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
        return ValueError(_("stage {name!r} has shape {shape} and {other!r} has {other_shape}: {rule}").format(
            name=name, shape=list(shapes[name]), other=other, other_shape=list(shapes[other]), rule=rule))

    model_width = None
    for name in shapes:
        prefix, short = name.rsplit(".", 1) if "." in name else ("", name)
        if prefix.endswith(".attention"):
            if short == "k" and (q := f"{prefix}.q") in shapes and shapes[q][-1] != shapes[name][-1]:
                raise differ(name, q, _("queries and keys must share d_head (the last dimension)"))
            if short == "context" and (v := f"{prefix}.v") in shapes and shapes[v][-1] != shapes[name][-1]:
                raise differ(name, v, _("values and context must share d_v (the last dimension)"))
            if short == "concat":
                per_head = next((f"{prefix}.{s}" for s in ("context", "v") if f"{prefix}.{s}" in shapes), None)
                if per_head is not None:
                    b, h, pos, d_v = shapes[per_head]
                    if shapes[name][-1] != h * d_v:
                        raise differ(name, per_head, _("concat must be [batch, pos, heads × d_v] = {want}").format(
                            want=[b, pos, h * d_v]))
        if name == "embeddings" or name.endswith((".attention.projected", ".attention.output",
                                                  ".feed_forward.output")):
            if model_width is None:
                model_width = name
            elif shapes[name][-1] != shapes[model_width][-1]:
                raise differ(name, model_width, _("the embeddings, attention outputs and feed-forward outputs must "
                                                  "share d_model (the last dimension)"))
