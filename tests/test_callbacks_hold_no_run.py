"""No widget callback or option formatter keeps a run's data alive (a class of 30 shares one server's memory).

Streamlit stores each widget's callback and ``format_func`` in the session until the next run. A
function defined in a page script has that run's module (trace, figures, tables) as its
``__globals__``, so a page must hand widgets only ui.callbacks functions bound to keys and labels.
"""
from __future__ import annotations

import ast
import functools
import types
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from apptest_utils import new_app

from transformer_core.records.trace import Trace
from ui.shell import nav

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]
HELD = ("on_change", "on_click", "on_select", "format_func")  # what Streamlit keeps after the run


def _page_functions(tree: ast.Module) -> set[str]:
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def _offenders(source: str) -> list[str]:
    tree = ast.parse(source)
    own = _page_functions(tree)
    bad = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        for kw in call.keywords:
            if kw.arg not in HELD:
                continue
            value = kw.value
            if isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) == "partial":
                value = value.args[0] if value.args else value
            if isinstance(value, ast.Lambda) or (isinstance(value, ast.Name) and value.id in own):
                bad.append(f"line {kw.value.lineno}: {kw.arg}={ast.unparse(kw.value)[:60]}")
    return bad


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_pages_hand_widgets_no_function_of_their_own(script):
    assert _offenders(script.read_text()) == []


def test_the_check_catches_a_page_lambda_and_a_page_function():
    page = ("def _open():\n    pass\n"
            "st.selectbox('x', range(3), format_func=lambda b: labels[b])\n"
            "st.plotly_chart(fig, on_select=_open)\n"
            "st.button('y', on_click=partial(_open, 1))\n"
            "st.button('z', on_click=callbacks.next_seed)\n")
    assert [b.split(":")[0] for b in _offenders(page)] == ["line 3", "line 4", "line 5"]


def _held_objects(obj, depth=0):
    """What a stored callable reaches: partial arguments, bound-method owners (serdes) and their
    attributes, closure cells, and the module it was defined in."""
    if depth > 4 or obj is None:
        return
    yield obj
    if isinstance(obj, functools.partial):
        for o in (obj.func, *obj.args, *obj.keywords.values()):
            yield from _held_objects(o, depth + 1)
    elif isinstance(obj, types.MethodType):
        yield from _held_objects(obj.__func__, depth + 1)
        for o in vars(obj.__self__).values() if hasattr(obj.__self__, "__dict__") else ():
            yield from _held_objects(o, depth + 1)
    elif isinstance(obj, types.FunctionType):
        yield ("module", obj.__globals__.get("__name__"), obj.__qualname__)
        for cell in obj.__closure__ or ():
            yield from _held_objects(cell.cell_contents, depth + 1)
    elif isinstance(obj, list | tuple | dict) and len(obj) < 10_000:
        for o in obj.values() if isinstance(obj, dict) else obj:
            yield from _held_objects(o, depth + 1)


def _stored(at):
    state = at._session_state._state._new_widget_state  # AppTest's own SessionState: read, never changed
    for meta in state.widget_metadata.values():
        for obj in (meta.callback, *(meta.callbacks or {}).values(), *(meta.callback_args or ()),
                    *(meta.callback_kwargs or {}).values(), meta.deserializer, meta.serializer):
            yield meta.id, obj


@pytest.mark.parametrize("page", [p.script for p in nav.PAGES])  # every registered page
def test_no_stored_callable_reaches_the_run(page):
    at = new_app(text="the cat sat on the mat\nthe dog sat")
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    checked = 0
    for wid, root in _stored(at):
        for obj in _held_objects(root):
            checked += 1
            if isinstance(obj, tuple) and obj[:1] == ("module",):
                assert obj[1] != "__main__", f"{wid}: {obj[2]} is defined in the page script"
            assert not isinstance(obj, Trace | np.ndarray | pd.DataFrame | go.Figure), (
                f"{wid}: a stored callable holds a {type(obj).__name__}")
    assert checked > 10
