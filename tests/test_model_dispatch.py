"""No code outside the model registry (``transformer_core/models/__init__.py`` and ``face.py``) compares a model's
name: analyses, the command line and the pages ask the model's face (its sizes, its kind) instead. On the code
before the face this listed value_norms, the slide's description, the export command (eight places) and the
modern page's KV-cache tab."""
from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


DISPATCH = re.compile(r"""(==|!=)\s*["'](toy|minilm|causal|smollm2)["']|["'](toy|minilm|causal|smollm2)["']\s*(==|!=)""")
REGISTRY = {"transformer_core/models/__init__.py", "transformer_core/models/face.py"}


def test_no_code_outside_the_registry_compares_a_model_name():
    found = []
    for folder in ("transformer_core", "ui", "pages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in REGISTRY:
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if DISPATCH.search(line):
                    found.append(f"{rel}:{n}: {line.strip()}")
    assert found == [], "ask the model's face (transformer_core.models) instead:\n" + "\n".join(found)
