"""User text inside Streamlit Markdown (notes, captions) must stay inert text.

Streamlit has no escaping helper, and backslash escapes alone are not enough: its Markdown
turns ``http://…``, ``www.…`` and ``a@b.c`` into links after parsing (GFM autolink literals
work on the decoded text), and rewrites ``:material/name:`` into an icon before parsing.
:func:`plain` escapes the punctuation Markdown reads (emphasis, links, images, HTML, LaTeX
``$``, ``:red[…]`` directives) and puts an invisible WORD JOINER (U+2060) where those
patterns would start. The text reads exactly as typed (``tests/test_browser_inert.py``
checks it in Chromium). Where no Markdown is needed, use a widget that shows plain text
(``st.selectbox`` options, ``st.dataframe``, ``st.text``, ``st.code``) and no :func:`plain`.
"""
from __future__ import annotations

import re

WORD_JOINER = "\u2060"  # invisible, no line break; not whitespace or punctuation, so no autolink starts after it
# Markdown and Streamlit's extras: emphasis, code, links, images, HTML, entities, tables, LaTeX $, :icons:, @
_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!<>|~$:&@^])")
_WWW = re.compile(r"(?i)(www)(?=\\\.)")


def plain(text: object) -> str:
    """``"**hi** see http://x.org"`` → Markdown that shows exactly that, on one line: no bold, link or icon.

    Line breaks become spaces (a note is one line). Backslashes escape the punctuation; a word
    joiner follows every ``:`` (icons ``:material/…:``, emoji ``:smile:``, ``http:``,
    ``mailto:``) and precedes every ``@`` (e-mail) and the ``.`` of ``www.``.
    """
    flat = " ".join(str(text).splitlines())
    escaped = _PUNCTUATION.sub(r"\\\1", flat)
    escaped = escaped.replace("\\:", "\\:" + WORD_JOINER).replace("\\@", WORD_JOINER + "\\@")
    return _WWW.sub(r"\1" + WORD_JOINER, escaped)

