"""Partial reruns: a click inside one part of a page reruns only that part (``st.fragment``, Streamlit ≥ 1.37).

A page runs a part with :func:`part`. A widget inside it (a stage, a head, a clicked cell, a tab) then reruns
only the part: the sidebar, the overview and the tables elsewhere on the page stay as they are, and the
server builds and sends only what the part draws. Anything else (the sidebar, a new sentence) reruns the whole
page, which runs the part too, with the page's new values.

When the rest of the page reads a value that a click inside the part can change (the MiniLM overview, drawn in
the part but built by the page, follows the open stage; its token-pair section the clicked cell; its ablation
section the heads a tile click ablates), the part names it with :func:`follow`: if a click changed it, the whole
page reruns at once, so nothing on screen is left behind.
"""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from .i18n import setup_package

_RUNS, _SEEN = "_fragment_runs_", "_fragment_seen_"


def part(name: str, body: Callable, *args, **kwargs) -> None:
    """Run ``body(*args, **kwargs)`` as the fragment ``name`` (unique on the page; nested parts allowed).

    The arguments are those of the page's last full run: a click inside the part reruns ``body`` with them.
    """
    ss = st.session_state
    ss[_RUNS + name] = ss.get(_RUNS + name, 0) + 1  # counts the enclosing runs: this line is outside the fragment
    _fragment(name, body, args, kwargs)


@st.fragment
def _fragment(name: str, body: Callable, args: tuple, kwargs: dict) -> None:
    # a rerun of the part alone skips app.py, which sets the package's language for the run: set it here too, or
    # the figures and the tutorials' comments drawn by transformer_core come back in English on a Chinese page
    setup_package()
    body(*args, **kwargs)


def follow(name: str, **values) -> None:
    """Inside the part ``name``: ``values`` are read by the rest of the page. If a click inside the part changed
    one of them since the page was last drawn, rerun the whole page (``st.rerun``; the part stops here)."""
    ss = st.session_state
    run, seen = ss.get(_RUNS + name), ss.get(_SEEN + name)
    ss[_SEEN + name] = (run, values)
    if seen is not None and seen[0] == run and seen[1] != values:  # a rerun of the part alone, and a value moved
        st.rerun(scope="app")
