"""The app in two languages: ``_()`` for the session's language (the switch and tabs: :mod:`ui.shell.language_widgets`).

* The language is ``?lang=en|zh`` in the URL (so a teacher's link opens in the class's language), kept in
  ``st.session_state["ui_lang"]`` by the sidebar switch (English / 中文); without ``lang`` the page follows
  the browser's language (``st.context.locale``: ``zh-CN``, ``zh-TW`` … → 中文).
* :func:`setup_package` runs in ``app.py`` on every run: it sets the package's language for this script
  thread (figure titles, axis titles and texts built in ``transformer_core`` read it).
* Translations are the package's gettext catalogs (``transformer_core/locales``; ``python scripts/i18n.py``),
  read here with the standard library so that ``app.py`` can draw the menu before ``transformer_core``
  (and torch) is imported; :mod:`transformer_core.text.i18n` reads the same files.
"""
from __future__ import annotations

import functools
import gettext
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import streamlit as st

T = TypeVar("T")

LANGUAGES = {"en": "English", "zh": "中文"}  # as transformer_core.text.i18n.LANGUAGES (a test checks)
DEFAULT = "en"
LOCALES = Path(__file__).resolve().parents[2] / "transformer_core" / "locales"
KEY = "ui_lang"
URL = "lang"


def N_(message: str) -> str:
    """Mark a constant for extraction; translate it with :func:`_` where it is shown."""
    return message


@functools.lru_cache(maxsize=None)
def _catalog(code: str) -> gettext.NullTranslations:
    if code == DEFAULT or code not in LANGUAGES:
        return gettext.NullTranslations()
    return gettext.translation("messages", LOCALES, languages=[code])


def from_locale(locale: str | None) -> str:
    """``"zh-CN"``, ``"zh_TW"`` → ``"zh"``; anything else → ``"en"``."""
    return "zh" if locale and str(locale).lower().replace("_", "-").split("-")[0] == "zh" else DEFAULT


def from_code(code: str | None) -> str | None:
    """A ``?lang=`` value → the app's language: ``zh``, ``zh-CN``, ``zh_cn``, ``zh-Hans``, ``zh-Hant-TW`` → ``"zh"``;
    ``en``, ``en-US`` → ``"en"`` (as a browser's locale is read, :func:`from_locale`); anything else → None."""
    first = str(code or "").strip().lower().replace("_", "-").split("-")[0]
    return first if first in LANGUAGES else None


def browser_language() -> str:
    """``"zh"`` when the browser asks for Chinese, else ``"en"``."""
    try:
        return from_locale(st.context.locale)
    except Exception:  # noqa: BLE001  (no browser context: bare mode, tests)
        return DEFAULT


def language() -> str:
    """The session's language: the switch, else ``?lang=``, else the browser's (English outside a session)."""
    try:
        chosen = st.session_state.get(KEY)
        if chosen in LANGUAGES:
            return chosen
        raw = st.query_params.get(URL)
    except Exception:  # noqa: BLE001  (no script run: pure functions called from tests)
        return DEFAULT
    return from_code(raw) or browser_language()


def resend_label(key: str) -> None:
    """Call just before a keyed widget whose option labels are translated.

    After a language switch its value is assigned again, so Streamlit sends it with the new label: the
    browser otherwise keeps showing the old language's label of an unchanged value (as for the stale
    picker labels of STREAMLIT-NOTES). ``ui.shell.url.bind_url`` calls it for every URL-bound widget.
    """
    ss, code, seen = st.session_state, language(), f"_lang_{key}"
    if key in ss and ss.get(seen) not in (None, code):
        ss[key] = ss[key]
    ss[seen] = code


def setup_package() -> str:
    """Set this run's language for ``transformer_core`` (its figures' texts); returns it."""
    from transformer_core.text import i18n as core

    return core.set_language(language())


def _(message: str, code: str | None = None) -> str:
    """``message`` (English, as written in the code) in the session's language (or ``code``'s)."""
    return _catalog(code or language()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    return _catalog(language()).ngettext(singular, plural, n)


def later(build: Callable[[], T]) -> Callable[[], T]:
    """``build`` to be called after this run, in this run's language: a download button's ``data`` callable runs on
    the click, in a server thread outside any script run, where ``transformer_core`` would speak English."""
    from transformer_core.text import i18n as core

    code = core.language()

    def run() -> T:
        with core.use_language(code):
            return build()
    return run
