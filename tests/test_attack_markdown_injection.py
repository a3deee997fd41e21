"""Regression (from an attack): user text never renders as Markdown (it once did).

URL-parameter notes and the "Reopen a downloaded JSON trace" warning pass user text through
``ui.markdown.plain``; sentence pickers are selectboxes (plain text). Here the warning once quoted
the file's ``format`` value raw, so a crafted file rendered a link, bold text or a remote image.
Streamlit's own autolinks and icons are checked in Chromium by ``tests/test_browser_inert.py``.
AppTest cannot drive ``st.file_uploader``, so it is replaced by a stub returning the file.
"""
from __future__ import annotations

import io
import json

import pytest
import streamlit as st

from apptest_utils import new_app

markdown_it = pytest.importorskip("markdown_it")


def _render(md: str) -> str:
    return markdown_it.MarkdownIt("commonmark").render(md)


def _interpreted(md: str) -> bool:
    html = _render(md)
    return any(tag in html for tag in ("<a ", "<img ", "<strong>", "<em>"))


def test_upload_warning_shows_the_files_text_as_text(monkeypatch):
    doc = {"format": "[Log in](https://evil.example) **x** ![i](http://127.0.0.1:9/p.png)"}
    data = json.dumps(doc).encode("utf-8")
    monkeypatch.setattr(st, "file_uploader", lambda *args, **kwargs: io.BytesIO(data))
    at = new_app().run()
    assert not at.exception
    notes = [w.value for w in at.warning if "not a trace" in w.value]
    assert notes, "the file is refused with a note"
    assert not any(_interpreted(n) for n in notes), _render(notes[0])
