"""Hook points and :func:`capture`: record every stage of a forward pass.

A :class:`HookPoint` is an identity module placed on the line that computes a stage
(the TransformerLens pattern). :func:`capture` names every hook point below a module by
its submodule path (``layers.0.attention.weights``) and records what flows through it
while the ``with`` block runs.

Why no ``register_forward_hook``: a model cached once per process (MiniLM) is shared by
every user session and thread; hooks are global state on that object, so two sessions
capturing at once would see each other's tensors. Instead the active captures live in
a :class:`contextvars.ContextVar`, which is private to each thread (and asyncio task).
Nothing is written on the module, and leaving the block always deactivates the capture,
even after an exception.
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterable, Iterator

import torch
from torch import nn

# The captures active in this thread: tuple of (names by hook-point id, store).
_ACTIVE: contextvars.ContextVar[tuple] = contextvars.ContextVar("transformer_core_captures", default=())
# The interventions active in this thread: tuple of {hook-point id: function} (see :func:`intervene`).
_EDITS: contextvars.ContextVar[tuple] = contextvars.ContextVar("transformer_core_edits", default=())


class HookPoint(nn.Module):
    """Identity module marking one stage; inside :func:`intervene` its value may be replaced, and
    inside :func:`capture` the value passed on (after any intervention) is recorded.

    ``copy=False`` (for a stage whose tensor its module never changes in place afterwards, e.g. every stage of
    :mod:`transformer_core.nn.gqa`) records a float32 CPU tensor itself, detached, instead of a copy: at 512 tokens
    SmolLM2's scores, masked scores and weights are 850 MB, and copying them cost more than computing them."""

    def __init__(self, copy: bool = True) -> None:
        super().__init__()
        self.copy = copy

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for edits in _EDITS.get():  # empty outside intervene(): the default path is unchanged
            edit = edits.get(id(self))
            if edit is not None:
                x = edit(x)
        for names, store in _ACTIVE.get():
            name = names.get(id(self))
            if name is not None:
                kept = x.detach().to(device="cpu", dtype=torch.float32)
                store[name] = kept.clone() if self.copy else kept
        return x


def watched(points: Iterable[HookPoint] | None = None) -> bool:
    """Whether a :func:`capture` or an :func:`intervene` block active in this thread records or edits any of
    ``points`` (``None``: whether any such block is active at all). A module may take a faster path that skips its
    hook points when none of them is watched (:mod:`transformer_core.nn.gqa` does): a capture of one layer's weights
    then leaves the other layers on their fast path."""
    captures, edits = _ACTIVE.get(), _EDITS.get()
    if points is None or not (captures or edits):
        return bool(captures) or bool(edits)
    ids = [id(p) for p in points]
    return any(i in names for names, _store in captures for i in ids) or any(i in e for e in edits for i in ids)


def stage_name(module_path: str) -> str:
    """``layers.0.attention.hook_weights`` → ``layers.0.attention.weights``."""
    head, _, last = module_path.rpartition(".")
    last = last.removeprefix("hook_")
    return f"{head}.{last}" if head else last


@contextlib.contextmanager
def capture(module: nn.Module, only: Callable[[str], bool] | None = None) -> Iterator[dict[str, torch.Tensor]]:
    """Record every stage of ``module``'s forward calls made inside the block.

    Yields a dict, filled as forward calls run, from stage name to a detached float32
    CPU copy of the tensor. Names are submodule paths with the ``hook_`` prefix dropped:
    ``weights`` for a bare :class:`~transformer_core.nn.attention.MultiHeadAttention`,
    ``layers.0.attention.weights`` inside an encoder. A second forward call inside the
    same block overwrites the stages of the first.

    Capturing never changes the forward result, touches no module state, and is private
    to the calling thread: a model shared between threads can be captured from each.

    Example::

        with capture(mha) as stages:
            out, w = mha(x, x, x, mask)
        stages["weights"]  # [batch, head, query_pos, key_pos]
    """
    names = {id(m): stage_name(path) for path, m in module.named_modules() if isinstance(m, HookPoint)}
    if only is not None:  # record (copy) only the stages asked for: a 512-token MiniLM run copies ~570 MB otherwise
        names = {key: name for key, name in names.items() if only(name)}
    store: dict[str, torch.Tensor] = {}
    token = _ACTIVE.set(_ACTIVE.get() + ((names, store),))
    try:
        yield store
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def intervene(module: nn.Module, edits: dict[str, Callable[[torch.Tensor], torch.Tensor]]) -> Iterator[None]:
    """Replace stages of ``module``'s forward calls made inside the block: ``edits`` maps a stage
    name (as :func:`capture` names it, e.g. ``layers.3.attention.context``) to a function of the
    stage's tensor returning the tensor passed on instead (same shape).

    Like :func:`capture`, nothing is written on the module: the edits live in a context variable
    private to the calling thread, so a model shared between sessions is never changed for another
    thread, and leaving the block always removes them. A capture inside the block records the
    edited value. Used for head ablation (:mod:`transformer_core.analysis.ablation`).

    Raises:
        KeyError: a stage name that is not a hook point of ``module`` (the message names it).
    """
    ids = {stage_name(path): id(m) for path, m in module.named_modules() if isinstance(m, HookPoint)}
    unknown = [name for name in edits if name not in ids]
    if unknown:
        raise KeyError(f"no stage {unknown[0]!r} in {type(module).__name__}")
    token = _EDITS.set(_EDITS.get() + ({ids[name]: fn for name, fn in edits.items()},))
    try:
        yield
    finally:
        _EDITS.reset(token)
