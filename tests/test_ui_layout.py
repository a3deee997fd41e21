"""The app's rooms: imports run one way, pages → page rooms → parts → shell → transformer_core, with no circle.

Every module's imports (lazy ones inside functions too) are read with ``ast`` (nothing is imported), resolved to
modules of the app and the package, and checked against the order of the rooms. No page room imports another, no
module sits outside a room, none is longer than 350 lines, transformer_core never imports ``ui`` or Streamlit, and
no app module imports torch (the numbers are computed in transformer_core, where the CLI and a notebook reach them).
The checker is run on made-up modules too, so it is shown to fail on each kind of fault.
"""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

from test_package_layout import imports_of
from ui.shell import nav

ROOT = Path(__file__).resolve().parent.parent
PAGE_ROOMS = tuple(dict.fromkeys(page.room for page in nav.PAGES))  # from the page registry, in its order
# Each level may import the levels below it (and its own room), never one above.
LEVELS = {"transformer_core": 0, "ui.shell": 1, "ui.parts": 2, **{room: 3 for room in PAGE_ROOMS}, "pages": 4}
MAX_LINES = 350


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def room_of(module: str) -> str | None:
    """``ui.parts.head_view`` → ``ui.parts``; pages and ``app`` → ``pages``; ``ui`` itself and flat ``ui.x`` → None."""
    parts = module.split(".")
    if parts[0] == "transformer_core":
        return "transformer_core"
    if parts[0] in ("pages", "app"):
        return "pages"
    if parts[0] == "ui" and len(parts) > 1 and f"ui.{parts[1]}" in LEVELS:
        return f"ui.{parts[1]}"
    return None


def import_pairs(sources: dict[str, tuple[str, bool]]):
    """``(module, what it imports)`` for every import of every module."""
    for name, (source, is_package) in sources.items():
        yield from ((name, target) for target in imports_of(source, name, is_package))


def check_modules(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """Problems in modules given as ``{module name: (source, is_package)}``; empty when all is well."""
    problems = [f"{name} is outside a room" for name in sources if name.startswith("ui.") and room_of(name) is None]
    graph = nx.DiGraph()
    graph.add_nodes_from(sources)
    for name, target in import_pairs(sources):
        room, there, top = room_of(name), room_of(target), target.split(".")[0]
        if room == "transformer_core" and top in ("ui", "streamlit", "pages", "app"):
            problems.append(f"{name} (transformer_core) imports {top}")
        if room not in (None, "transformer_core") and top == "torch":  # the numbers are transformer_core's
            problems.append(f"{name} ({room}) imports torch")
        if target in sources and target != name and room != "transformer_core":  # its own circles: test_package_layout
            graph.add_edge(name, target)
        if room is None or there is None or there == room or target == "ui":
            continue
        if LEVELS[there] > LEVELS[room]:
            problems.append(f"{name} ({room}) imports {target} ({there}), a higher room")
        elif LEVELS[there] == LEVELS[room]:
            problems.append(f"{name} ({room}) imports {target}, another page room")
    problems += [f"import circle: {' → '.join(c)}" for c in nx.simple_cycles(graph)]
    return problems


def app_files() -> list[Path]:
    return [*sorted((ROOT / "ui").rglob("*.py")), *sorted((ROOT / "pages").glob("*.py")), ROOT / "app.py"]


def app_sources() -> dict[str, tuple[str, bool]]:
    files = [*app_files(), *sorted((ROOT / "transformer_core").rglob("*.py"))]
    return {module_name(p): (p.read_text(encoding="utf-8"), p.name == "__init__.py") for p in files}


def test_the_app_keeps_its_import_rules():
    assert check_modules(app_sources()) == []


def test_every_room_and_module_says_what_it_holds():
    for path in (ROOT / "ui").rglob("*.py"):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert doc, f"{path.relative_to(ROOT)} has no docstring"
        if path.name == "__init__.py":
            assert "\n" not in doc.strip(), f"{path.relative_to(ROOT)}: one line"
    for room in LEVELS:
        if room.startswith("ui.") and room not in ("ui.llm", "ui.modern"):  # those two: rooms for the next pages
            assert (ROOT / room.replace(".", "/") / "__init__.py").exists(), room


def test_no_app_module_is_longer_than_350_lines():
    long = {str(p.relative_to(ROOT)): n for p in app_files()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


@pytest.mark.parametrize("sources, expected", [
    ({"ui.shell.a": ("from . import b", False), "ui.shell.b": ("from .a import x", False)}, "import circle"),
    ({"ui.shell.a": ("def f():\n    from .b import x", False), "ui.shell.b": ("from .a import y", False)},
     "import circle"),  # a lazy import inside a function closes a circle too
    ({"ui.shell.a": ("from ..parts import b", False), "ui.parts.b": ("", False)}, "a higher room"),
    ({"ui.parts.a": ("from ui.minilm.b import x", False), "ui.minilm.b": ("", False)}, "a higher room"),
    ({"ui.causal.a": ("from ..parts import b", False), "ui.parts.b": ("from ui.shell import c", False),
      "ui.shell.c": ("import pages.explorer", False)}, "a higher room"),
    ({"ui.explorer.a": ("from ..minilm import moves", False), "ui.minilm.moves": ("", False)}, "another page room"),
    ({"ui.causal.a": ("import ui.lessons.b", False), "ui.lessons.b": ("", False)}, "another page room"),
    ({"transformer_core.analysis.a": ("from ui.shell import cache", False)}, "imports ui"),
    ({"transformer_core.figures.a": ("import streamlit as st", False)}, "imports streamlit"),
    ({"ui.moves": ("", False)}, "outside a room"),
    ({"ui.causal.compute": ("def f():\n    import torch", False)}, "imports torch"),
    ({"pages.p": ("from torch.nn import functional", False)}, "imports torch"),
])
def test_the_checker_fails_on_each_kind_of_fault(sources, expected):
    problems = check_modules(sources)
    assert any(expected in p for p in problems), problems


def test_the_checker_accepts_the_allowed_direction():
    sources = {"pages.p": ("from ui.minilm import moves\nfrom ui.parts import head_view\nfrom ui.shell import nav", False),
               "ui.minilm.moves": ("from ..parts.head_view import STAGES\nfrom .compute import x", False),
               "ui.minilm.compute": ("from ..shell.cache import memo\nfrom transformer_core.records import trace", False),
               "ui.parts.head_view": ("from ..shell import cache", False), "ui.shell.cache": ("import streamlit", False),
               "ui.shell.nav": ("", False), "transformer_core.records.trace": ("", False)}
    assert check_modules(sources) == []
