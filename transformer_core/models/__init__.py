"""The models we run, each returning a :class:`~transformer_core.records.trace.Trace`: the random-weight toy
encoder (``toy``), MiniLM-L6 on our modules (``minilm``, ``minilm_trace``), the causal model trained in this
repo (``causal``, with its trainer ``train_causal`` and its checkpoints in ``data/``), SmolLM2-135M (``smollm2``)
and local LLaMA-family checkpoints (``checkpoint``: a Hugging Face folder or a GGUF file).

Every model has one face (:class:`~transformer_core.models.face.Model`): :func:`available` lists the names,
:func:`load` returns a model by name or path, :func:`from_settings` the model that made a trace. This registry is
the one place that turns a model's name into code; analyses, the command line and the pages ask the face.

May import ``text``, ``nn`` and ``records``; never plotly or Streamlit.
"""
from __future__ import annotations

import collections
import threading
from pathlib import Path

from .face import CausalFace, Decoder, MiniLMFace, Model, ModelConfig, Toy, describe_settings  # noqa: F401

NAMES = ("toy", "minilm", "causal", "smollm2")
_LOCK = threading.Lock()


def available() -> tuple[str, ...]:
    """The names :func:`load` takes besides a path: ``("toy", "minilm", "causal", "smollm2")``."""
    return NAMES


KEPT = 2  # local checkpoints held at once per process (the least recently used is dropped for a third)
_kept: collections.OrderedDict = collections.OrderedDict()  # (path, mtime) → Checkpoint, most recent last


def load_local(path, *, max_bytes: int | None = None) -> Decoder:
    """A local checkpoint's face, read once per process while the file or folder is unchanged (:data:`KEPT` kept).

    ``max_bytes``: refuse to read a checkpoint not yet held whose float32 weights
    (:func:`~transformer_core.models.checkpoint.float32_bytes`) exceed it.

    Raises:
        CheckpointError: see :func:`~transformer_core.models.checkpoint.load_checkpoint`; CheckpointTooLarge (one)
            over ``max_bytes``.
    """
    from .checkpoint import SUPPORTED, CheckpointError, CheckpointTooLarge, float32_bytes, load_checkpoint

    resolved = Path(path).expanduser().resolve()
    try:
        key = (str(resolved), resolved.stat().st_mtime)
    except OSError:
        raise CheckpointError(f"{path} does not exist: expected {SUPPORTED}") from None
    with _LOCK:
        if key not in _kept:
            if max_bytes is not None and (need := float32_bytes(resolved)) > max_bytes:
                raise CheckpointTooLarge(resolved, need, max_bytes)
            _kept[key] = load_checkpoint(resolved)
            while len(_kept) > KEPT:
                _kept.popitem(last=False)
        _kept.move_to_end(key)
        return Decoder(_kept[key])


def is_held(path) -> bool:
    """Whether the local checkpoint at ``path`` is in memory now (loading it costs nothing more)."""
    resolved = Path(path).expanduser().resolve()
    with _LOCK:
        return any(p == str(resolved) for p, _stamp in _kept)


def load(name_or_path, *, step: int | None = None, **options) -> Model:
    """The model called ``name_or_path`` (one of :func:`available`), or the local checkpoint at that path.

    ``step``: the causal model's checkpoint (ignored by the others); ``options``: the toy's ``encoder`` (an
    :class:`~transformer_core.nn.config.EncoderConfig`) and run options.

    Raises:
        CheckpointError: not a name, and the path holds no supported checkpoint (the message says what is
            supported). A named model's own errors (e.g. SmolLM2Unavailable) come when it is first used.
    """
    name = str(name_or_path)
    if name == "toy":
        return Toy(**options)
    if name == "minilm":
        return MiniLMFace()
    if name == "causal":
        return CausalFace(step)
    if name == "smollm2":
        return Decoder()
    return load_local(name)


def face_type(settings: dict) -> type | None:
    """The face class of the model a trace's settings name, without loading it (``None``: no model we have).
    ``face_type(s).resizable`` says whether its sizes were options of the run (the toy's)."""
    name = settings.get("model")
    types = {"toy": Toy, "minilm": MiniLMFace, "causal": CausalFace, "smollm2": Decoder, "local": Decoder}
    return types.get(name) if isinstance(name, str) else None


def from_settings(settings: dict) -> Model:
    """The model that made a trace, from ``trace.settings``.

    Raises:
        ValueError: the settings name no model whose weights can be read (e.g. an uploaded file's ``"model"``).
    """
    name = settings.get("model")
    if name == "toy":
        return Toy.from_settings(settings)
    if name == "causal":
        return CausalFace(settings.get("step"))
    if name in NAMES:
        return load(name)
    if name == "local" and isinstance(settings.get("path"), str):
        return load_local(settings["path"])
    raise ValueError(f"W_O unknown for model {name!r}: value-weighted norms need the model's weights")
