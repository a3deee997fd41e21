"""What `docker build` is sent (.dockerignore): no virtual environments, caches or benchmark outputs, and
everything the Dockerfile needs (tests/test_install.py checks that it installs the package)."""
from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def ignored(path: str) -> bool:
    """Whether Docker's .dockerignore rules leave ``path`` out (the patterns used here: names, ``**/``)."""
    rules = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    parts = path.split("/")
    out = False
    for rule in rules:
        negate = rule.startswith("!")
        rule = rule.lstrip("!")
        prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        hit = any(fnmatch.fnmatch(prefix, rule) or (rule.startswith("**/") and fnmatch.fnmatch(prefix.split("/")[-1],
                                                                                              rule[3:]))
                  for prefix in prefixes)
        if hit:
            out = not negate
    return out


@pytest.mark.parametrize("path", [".venv/bin/python", ".ci-venv/lib/x.py", "venv/bin/python", ".pytest_cache/v",
                                  "__pycache__/app.cpython-311.pyc", "ui/__pycache__/x.pyc", ".hypothesis/examples",
                                  "artifacts/bertviz_js/d3.js", "attention_explorer.egg-info/PKG-INFO", ".git/HEAD"])
def test_left_out(path):
    assert ignored(path), path


@pytest.mark.parametrize("path", ["app.py", "pyproject.toml", "README.md", "requirements.txt", "deploy/nginx.conf",
                                  "transformer_core/__init__.py",
                                  "transformer_core/models/data/causal_model.safetensors"])
def test_sent(path):
    assert not ignored(path), path
