"""Which real LLMs this server offers: SmolLM2-135M, and the local checkpoints its operator lists. A student picks
from the list by name and never types a path.

The operator names them in one setting, read in this order:

1. the environment variable ``AE_LLM_MODELS``: entries separated by ``;`` or new lines;
2. ``llm_models`` in ``.streamlit/secrets.toml``: a list of entries, or a table ``{label = "path"}``.

An entry is ``smollm2`` (SmolLM2-135M from its pip package), ``Label=PATH`` or a bare ``PATH`` (labelled by its
file or folder name). ``PATH`` is a Hugging Face folder or a ``.gguf`` file that
:func:`transformer_core.models.load` reads (docs/models.md). Without a setting the list is SmolLM2 alone.
A listed path that cannot be read is still offered; choosing it says why it cannot run (the others keep working).
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..shell.i18n import N_

ENV = "AE_LLM_MODELS"
SECRET = "llm_models"
SMOLLM2 = "smollm2"


@dataclass(frozen=True)
class Choice:
    """One model of the list. ``label``: what the picker and ``?model=`` show; ``source``: ``"smollm2"`` or the
    checkpoint's absolute path (what :func:`transformer_core.models.load` takes). Hashable: the page's caches are
    keyed by it."""

    label: str
    source: str

    @property
    def is_smollm2(self) -> bool:
        return self.source == SMOLLM2

    @property
    def slug(self) -> str:
        """The label as a file-name prefix (``smollm2``, ``qwen2.5-0.5b``)."""
        keep = "".join(c if c.isalnum() or c in "._-" else "-" for c in self.label.lower())
        return "-".join(part for part in keep.split("-") if part)[:40] or "model"


DEFAULT = Choice("SmolLM2-135M", SMOLLM2)


def parse(entries: Iterable[str] | dict | str) -> tuple[Choice, ...]:
    """The choices an operator's setting names, in its order, each label once (a repeated label keeps the first).

    ``entries``: the environment variable's text, a list of entries, or a ``{label: path}`` table. Blank entries
    are skipped. An empty result means the setting lists nothing usable: :func:`configured` then offers SmolLM2.
    """
    if isinstance(entries, str):
        entries = entries.replace(";", "\n").splitlines()
    pairs = list(entries.items()) if isinstance(entries, dict) else [_split(str(e)) for e in entries]
    out: dict[str, Choice] = {}
    for label, source in pairs:
        label, source = str(label).strip(), str(source).strip()
        if not source:
            continue
        if source.lower() == SMOLLM2:
            choice = Choice(label or DEFAULT.label, SMOLLM2)
        else:
            path = Path(source).expanduser()
            choice = Choice(label or path.name or source, str(path.resolve()))
        out.setdefault(choice.label, choice)
    return tuple(out.values())


def _split(entry: str) -> tuple[str, str]:
    """``"Label=PATH"`` → ``("Label", "PATH")``; ``"PATH"`` or ``"smollm2"`` → ``("", entry)``.

    A ``=`` may stand in a label or a path: an entry that is an existing path is a bare path (``/models/lr=3e-4``),
    else it splits at the first ``=`` whose right side exists (``a=b=/models/x`` is labelled ``a=b``), else at the
    first ``=``."""
    entry = entry.strip()
    if "=" not in entry or _exists(entry):
        return "", entry
    cuts = [i for i, c in enumerate(entry) if c == "="]
    at = next((i for i in cuts if _exists(entry[i + 1:].strip())), cuts[0])
    return entry[:at], entry[at + 1:]


def _exists(text: str) -> bool:
    """Whether ``text`` names an existing file or folder; False for what no path can be (a name too long for the
    file system, a NUL byte)."""
    try:
        return Path(text).expanduser().exists()
    except (OSError, ValueError):
        return False


def _secret():
    """``llm_models`` from Streamlit's secrets, or None (no secrets file, or no such key)."""
    try:
        import streamlit as st

        value = st.secrets.get(SECRET)
    except Exception:  # noqa: BLE001 no secrets.toml, or one that does not parse: the setting is absent
        return None
    if isinstance(value, str | list | tuple):
        return value
    return dict(value) if hasattr(value, "items") else None


def configured() -> tuple[Choice, ...]:
    """The server's list: ``AE_LLM_MODELS`` if set, else the ``llm_models`` secret, else SmolLM2 alone (never
    empty)."""
    raw = os.environ.get(ENV)
    listed = parse(raw) if raw is not None and raw.strip() else parse(_secret() or ())
    return listed or (DEFAULT,)


def menu_title() -> str | None:
    """The menu's title for the real-LLM page when this server offers more than SmolLM2 (marked with ``N_``,
    translated where shown), else None: the registered title, which names SmolLM2, stays."""
    choices = configured()
    return None if all(c.is_smollm2 for c in choices) else N_("Real LLM")
