"""URL binding of a page's own widgets (``?stage=…``, ``?head=…``): read on a fresh session, written back on every run."""
from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from .failover import moved_this_run
from .i18n import _, resend_label
from .markdown import plain


def bind_url(key: str, url: str, options: Sequence, default, to_text: Callable = str,
             labels: Sequence[str] | None = None) -> None:
    """Seed the widget state ``st.session_state[key]`` from ``?url=…`` and keep the URL in step.

    Call just before creating the widget with ``key``. The URL is read only while the widget has
    no state yet (a fresh session or a page's first run), and only a value whose text is one of
    ``options`` is taken; anything else falls back to ``default`` with a visible note. The value
    left in session state is then written back, so a copied URL reopens the same view.

    ``labels``: the option texts the widget shows, when they depend on the learner's text (a
    sentence or token picker). When they differ from the last run's, the value is assigned again,
    so Streamlit sends it with the new label: a keyed selectbox whose options change under an
    unchanged value otherwise keeps showing the old label in the browser (STREAMLIT-NOTES).
    """
    ss = st.session_state
    if moved_this_run() and key not in ss:  # the widget gets the browser's value (ui/shell/failover.py)
        raw = st.query_params.get(url)
        ss.setdefault("_moved_fallback", {})[key] = next((o for o in options if to_text(o) == str(raw)), default)
        return
    resend_label(key)  # after a language switch the value is re-sent with its translated label (ui/shell/i18n.py)
    if labels is not None:
        seen, shown = f"_labels_{key}", hash(tuple(labels))
        relabel = key in ss and ss.get(seen) not in (None, shown)
        ss[seen] = shown
        if relabel:
            ss[key] = ss[key] if ss[key] in options else default  # re-sent with the current label
    texts = {to_text(o): o for o in options}
    if key not in ss and (raw := st.query_params.get(url)) is not None:
        if str(raw) in texts:
            ss[key] = texts[str(raw)]
        else:
            st.warning(_("URL parameter {param} ignored (choose one of {options}); using {default}.").format(
                param=plain(f"{url}={str(raw)[:40]}"), options=plain(", ".join(list(texts)[:12])),
                default=plain(to_text(default))), icon=":material/warning:")
    if ss.get(key, default) not in options:  # e.g. head 7 after n_heads went down to 4
        ss[key] = default
    value = ss.setdefault(key, default)
    if st.query_params.get(url) != to_text(value):
        st.query_params[url] = to_text(value)


def fallback(key: str):
    """What a widget bound by :func:`bind_url` should start from when its state is unknown, else None.

    Only on a moved session's first run (ui/shell/failover.py) is a widget's state unknown before it is drawn:
    its key is not in ``st.session_state`` until then, and the browser may not have sent its value at all.
    Pass this as the widget's own default (``default=``/``value=``), which Streamlit uses only when the
    browser sent nothing, so a click still counts and the URL fills in the rest."""
    if moved_this_run() and key not in st.session_state:
        return st.session_state.get("_moved_fallback", {}).get(key)
    return None


def value(key: str):
    """A bound widget's value before the widget is drawn this run: its state, or :func:`fallback`."""
    return st.session_state[key] if key in st.session_state else fallback(key)
