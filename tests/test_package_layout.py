"""transformer_core's rooms: imports point one way, nothing imports Streamlit, the math (text, nn) no plotly or
pandas, and plotly only in ``figures`` (the command line above it builds its slides there).

Every module's imports are read with ``ast`` (no import is executed), resolved to modules of the package,
and checked against the order of the rooms. The checker is run on made-up modules too, so it is shown to
fail on a circle, on a downward import, on plotly in the math and on Streamlit anywhere.
"""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "transformer_core"
# Each room may import rooms earlier in this list (and itself), never later ones.
ROOMS = ("text", "nn", "records", "models", "analysis", "figures", "cli")
NO_PLOTLY_OR_PANDAS = ("text", "nn")  # the math
NO_PLOTLY = ("text", "nn", "records", "models", "analysis", "cli")  # plotly only in figures
MAX_LINES = 400


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, name: str, is_package: bool) -> list[str]:
    """Absolute names of every module ``source`` imports (``from . import x`` gives ``pkg.x``)."""
    out = []
    base = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                target = ".".join(anchor + ([node.module] if node.module else []))
            else:
                target = node.module
            out.append(target)
            out += [f"{target}.{a.name}" for a in node.names]  # `from pkg import module`
    return out


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "transformer_core" and parts[1] in ROOMS else None


def check_modules(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """Problems in a package given as ``{module name: (source, is_package)}``; empty when all is well."""
    problems = []
    graph = nx.DiGraph()
    known = set(sources)
    for name, (source, is_package) in sources.items():
        graph.add_node(name)
        room = room_of(name)
        for target in imports_of(source, name, is_package):
            top = target.split(".")[0]
            if top == "streamlit":
                problems.append(f"{name} imports streamlit")
            if (top == "pandas" and room in NO_PLOTLY_OR_PANDAS) or (top == "plotly" and room in NO_PLOTLY):
                problems.append(f"{name} ({room}) imports {top}")
            if target not in known or target == name:
                continue
            graph.add_edge(name, target)
            there = room_of(target)
            if room and there and ROOMS.index(there) > ROOMS.index(room):
                problems.append(f"{name} ({room}) imports {target} ({there}), a later room")
    problems += [f"import circle: {' → '.join(c)}" for c in nx.simple_cycles(graph)]
    return problems


def package_sources() -> dict[str, tuple[str, bool]]:
    return {module_name(p, PACKAGE): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
            for p in PACKAGE.rglob("*.py")}


def test_the_package_keeps_its_import_rules():
    assert check_modules(package_sources()) == []


def test_every_room_exists_with_a_docstring_that_says_what_it_may_import():
    for room in ROOMS:
        doc = ast.get_docstring(ast.parse((PACKAGE / room / "__init__.py").read_text()))
        assert doc and ("import" in doc.lower()), room
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert flat == ["__init__.py"], f"modules outside a room: {flat}"


def test_no_module_is_longer_than_about_400_lines():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


@pytest.mark.parametrize("sources, expected", [
    ({"transformer_core.nn.a": ("from ..figures import b", False), "transformer_core.figures.b": ("", False)},
     "a later room"),
    ({"transformer_core.nn.a": ("import plotly.graph_objects as go", False)}, "imports plotly"),
    ({"transformer_core.nn.a": ("import pandas as pd", False)}, "imports pandas"),
    ({"transformer_core.analysis.a": ("import plotly.graph_objects as go", False)}, "imports plotly"),
    ({"transformer_core.cli.slides": ("import plotly.graph_objects as go", False)}, "imports plotly"),
    ({"transformer_core.figures.a": ("import streamlit as st", False)}, "imports streamlit"),
    ({"transformer_core.models.a": ("from . import b", False), "transformer_core.models.b": ("from .a import x", False)},
     "import circle"),
])
def test_the_checker_fails_on_each_kind_of_fault(sources, expected):
    problems = check_modules(sources)
    assert any(expected in p for p in problems), problems


def test_relative_imports_resolve_to_the_right_module():
    assert "transformer_core.nn.masks" in imports_of("from ..nn import masks", "transformer_core.models.toy", False)
    assert "transformer_core.nn.hooks" in imports_of("from .hooks import x", "transformer_core.nn.attention", False)
    assert "transformer_core.nn.masks" in imports_of("from .masks import x", "transformer_core.nn", True)
