"""The language switch and translated tabs, both bound to the URL.

A tab whose label changes is reset by Streamlit (streamlit #8239), so :func:`tabs` keeps the open tab by
its English name: a label of the other language in session state is mapped to this language's before
``st.tabs`` runs, and the URL holds the English name (``?step=Attention`` in both languages).
"""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from .i18n import KEY, LANGUAGES, URL, _, browser_language, from_code, language
from .url import bind_url


def switch() -> None:
    """The sidebar's language switch, bound to ``?lang=`` (drawn by ``ui.shell.controls.sidebar``)."""
    raw = st.query_params.get(URL)
    if raw is not None and raw not in LANGUAGES and (code := from_code(raw)):  # zh-CN, zh-Hans → zh
        st.query_params[URL] = code
    bind_url(KEY, URL, tuple(LANGUAGES), browser_language())
    st.radio("Language / 语言", tuple(LANGUAGES), format_func=LANGUAGES.get, key=KEY, horizontal=True,
             label_visibility="collapsed")


def _same_tab(key: str, labels_in, shown: list[str]) -> None:
    """A tab label of another language in ``session_state[key]`` → this language's label of the same tab."""
    current = st.session_state.get(key)
    if current is None or current in shown:
        return
    for code in LANGUAGES:
        labels = labels_in(code)
        if current in labels:
            st.session_state[key] = shown[labels.index(current)]
            return


def tabs(names: Sequence[str], *, key: str, url: str | None = None, format_label=None) -> list:
    """``st.tabs`` of the translated ``names`` (English msgids, marked with ``N_``) that keeps the open tab when
    the language changes. Lazy: only the open tab's ``.open`` is True. With ``url``, the open tab's English
    name is in the URL (``?{url}=…``), read on a fresh session; ``format_label`` may decorate a label
    (e.g. ``"1 · " + label``)."""
    decorate = format_label or (lambda i, label: label)

    def labels_in(code: str) -> list[str]:
        return [decorate(i, _(n, code)) for i, n in enumerate(names)]

    shown = labels_in(language())
    _same_tab(key, labels_in, shown)
    if url is not None:
        bind_url(key, url, shown, shown[0], to_text=lambda s: names[shown.index(s)])
    elif st.session_state.get(key) not in (None, *shown):
        del st.session_state[key]
    return st.tabs(shown, key=key, on_change="rerun")
