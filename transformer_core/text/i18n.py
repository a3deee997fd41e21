"""Translations: gettext catalogs (compiled by Babel) and the language of the current thread.

English is the source language: every message is written in English in the code, marked with
:func:`_` (translate now) or :func:`N_` (mark a constant, translate where it is shown). The Chinese
catalog is ``transformer_core/locales/zh/LC_MESSAGES/messages.po`` (compiled to ``messages.mo`` beside it
by ``python scripts/i18n.py``); Python's own :mod:`gettext` reads the ``.mo``, so nothing beyond the
standard library is needed at run time. Chinese terms follow the two tutorials (注意力分数, 注意力权重,
掩码, 缩放点积注意力, 多头注意力, 逐位置前馈网络, 残差连接, 层归一化, 上下文向量); symbols stay
(Q, K, V, d_k, softmax, LayerNorm, W_O).

The language is a :class:`contextvars.ContextVar`: each thread (a Streamlit session's script run, a
command-line export) has its own, so concurrent sessions in two languages never mix.
"""
from __future__ import annotations

import contextlib
import functools
import gettext as _gettext
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

LANGUAGES = {"en": "English", "zh": "中文"}
DEFAULT = "en"
LOCALES = Path(__file__).resolve().parent.parent / "locales"
DOMAIN = "messages"
_language: ContextVar[str] = ContextVar("attention_explorer_language", default=DEFAULT)


@functools.lru_cache(maxsize=None)
def catalog(language: str) -> _gettext.NullTranslations:
    """The compiled catalog of ``language`` (English and unknown languages: the messages as written)."""
    if language == DEFAULT or language not in LANGUAGES:
        return _gettext.NullTranslations()
    return _gettext.translation(DOMAIN, LOCALES, languages=[language])


def language() -> str:
    """The current thread's language code (``"en"`` or ``"zh"``)."""
    return _language.get()


def set_language(code: str) -> str:
    """Make ``code`` the current thread's language (an unknown code gives English); return what was set."""
    code = code if code in LANGUAGES else DEFAULT
    _language.set(code)
    return code


@contextlib.contextmanager
def use_language(code: str) -> Iterator[str]:
    """``with use_language("zh"): …`` — translate in Chinese inside the block, then restore."""
    token = _language.set(code if code in LANGUAGES else DEFAULT)
    try:
        yield _language.get()
    finally:
        _language.reset(token)


def from_locale(locale: str | None) -> str:
    """A browser or system locale (``"zh-CN"``, ``"zh_TW.UTF-8"``, ``"en-GB"``) → ``"zh"`` or ``"en"``."""
    return "zh" if locale and str(locale).lower().replace("_", "-").split("-")[0] == "zh" else DEFAULT


def _(message: str, language: str | None = None) -> str:
    """``message`` in the current (or the given) language."""
    return catalog(language or _language.get()).gettext(message)


def ngettext(singular: str, plural: str, n: int, language: str | None = None) -> str:
    """The singular or plural form for ``n`` (Chinese has one form)."""
    return catalog(language or _language.get()).ngettext(singular, plural, n)


def pgettext(context: str, message: str, language: str | None = None) -> str:
    """``message`` as translated in ``context`` (a ``msgctxt``: one English word, two Chinese ones)."""
    return catalog(language or _language.get()).pgettext(context, message)


def N_(message: str) -> str:
    """Mark a constant for extraction without translating it (translate with :func:`_` where it is shown)."""
    return message
