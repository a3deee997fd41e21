"""kaleido's fresh Chromium page sometimes fails once ("kaleido_scopes is not defined"): the export command
draws again once, and reports a second failure as one line."""
from __future__ import annotations

import plotly.graph_objects as go
import pytest

from transformer_core.cli import slides
from transformer_core.cli.args import ExportError


def flaky(failures: int):
    calls = []

    def to_image(self, **kwargs):
        calls.append(kwargs)
        if len(calls) <= failures:
            raise RuntimeError("ReferenceError: kaleido_scopes is not defined\n  at <anonymous>")
        return b"PNG"
    return to_image, calls


def test_one_failure_is_drawn_again(monkeypatch):
    to_image, calls = flaky(1)
    monkeypatch.setattr(slides, "find_chromium", lambda: "/usr/bin/chromium")
    monkeypatch.setattr(go.Figure, "to_image", to_image)
    assert slides.render_image(go.Figure(), "png") == b"PNG" and len(calls) == 2


def test_two_failures_are_one_line(monkeypatch):
    to_image, calls = flaky(2)
    monkeypatch.setattr(slides, "find_chromium", lambda: "/usr/bin/chromium")
    monkeypatch.setattr(go.Figure, "to_image", to_image)
    with pytest.raises(ExportError, match=r"^PNG export failed in kaleido/Chromium: ReferenceError: kaleido_scopes "
                                          r"is not defined$"):
        slides.render_image(go.Figure(), "png")
    assert len(calls) == 2
