"""Lazy expanders: what a collapsed box holds is not built, sent or mounted until the student opens it.

Streamlit (≥ 1.5x) runs a keyed ``st.expander(..., on_change="rerun")`` as a widget: opening or closing it reruns the
page and its ``.open`` says which it is, so a page builds its content only ``if box.open``. Without that, a
collapsed box's ``st.dataframe`` still loads the data grid's code (~1.2 MB of scripts) on a first visit.
The open state is bound to the URL (``?{url}=1``) like the page's other choices, so a rerun, a copied link and a
moved session (ui/shell/failover.py) keep the box open.
"""
from __future__ import annotations

import streamlit as st

from .url import bind_url


def lazy_expander(label: str, *, key: str, url: str, note_to=None, **kwargs):
    """``st.expander(label, key=key, on_change="rerun")`` with its open state in ``?{url}=1``; read ``.open``.
    ``note_to``: where a refused ``?{url}=`` value's note goes (see :func:`ui.shell.url.bind_url`)."""
    # read: 1/0, true/false, on/off, yes/no as ?causal= (bind_url's on/off words); written: 1 or 0
    bind_url(key, url, (False, True), False, to_text=lambda v: "1" if v else "0", note_to=note_to)
    # no ``expanded=``: it is part of the widget's id, and bind_url (the URL) or the browser says whether it is open
    return st.expander(label, key=key, on_change="rerun", **kwargs)
