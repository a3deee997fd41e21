"""Widget callbacks and option formatters for the pages, bound with :func:`functools.partial`.

Streamlit keeps every widget's callback and ``format_func`` in the session's widget metadata until
the next run replaces them. A function defined in a page script has that run's module as its
``__globals__`` — its trace, figures and tables — so handing one to a widget keeps the whole run
alive. These live in a module loaded once per process and take only keys and labels (strings,
ints), never a run's data. ``tests/test_callbacks_hold_no_run.py`` checks no page hands a widget
a function of its own.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import streamlit as st

from transformer_core.figures.overview import picked_tile


def label_of(labels: Sequence[str], index: int) -> str:
    """``format_func`` for a selectbox over ``range(len(labels))``: ``partial(label_of, labels)``."""
    return labels[index]


def selected_points(event_key: str) -> list | None:
    """``event["selection"]["points"]`` of a chart's selection state, or None when any part is not what Streamlit
    sends (a broken or tampered event is ignored, not an error on the page)."""
    event = st.session_state.get(event_key)
    selection = event.get("selection") if isinstance(event, Mapping) else None
    return selection.get("points") if isinstance(selection, Mapping) else None


def clicked_tile(event_key: str, n_heads: int, n_layers: int | None = None) -> tuple[int, int] | None:
    """The overview tile a click chose, or None.

    Plotly deselects a selected marker that is clicked again, so a second click on the same tile (after the head
    was changed another way, or to take an ablated head back out) arrives with no point at all: that click means
    the tile picked last, which is kept in the session for it."""
    points, last = selected_points(event_key), f"_last_tile_{event_key}"
    if isinstance(points, list | tuple) and not points:
        return st.session_state.get(last)
    tile = picked_tile(points, n_heads, n_layers)
    if tile is not None:
        st.session_state[last] = tile
    return tile


def open_row(event_key: str, layer_key: str, head_key: str, n_heads: int, then=None) -> None:
    """``on_select`` of a per-head statistics table whose rows are layer-major (whatever the sort); ``then()`` after
    a row opened its head (e.g. ``partial(head_view.opened_by_tile, prefix)``: the head comes into view)."""
    event = st.session_state.get(event_key) or {}
    rows = (event.get("selection") or {}).get("rows") or []
    if rows:
        st.session_state[layer_key], st.session_state[head_key] = divmod(int(rows[0]), n_heads)
        if then is not None:
            then()
