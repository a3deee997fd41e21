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
from collections.abc import Callable, Iterator

import torch
from torch import nn

# The captures active in this thread: tuple of (names by hook-point id, store).
_ACTIVE: contextvars.ContextVar[tuple] = contextvars.ContextVar("transformer_core_captures", default=())


class HookPoint(nn.Module):
    """Identity module marking one stage; records its input inside :func:`capture`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for names, store in _ACTIVE.get():
            name = names.get(id(self))
            if name is not None:
                store[name] = x.detach().to(device="cpu", dtype=torch.float32).clone()
        return x


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
