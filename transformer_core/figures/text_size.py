"""How much room a text takes when drawn: display width (a CJK character counts two columns), an estimate in pixels,
and line wrapping by it. Used by the figure builders to lay labels and captions out before Plotly draws them."""
from __future__ import annotations

import html
import unicodedata


def display_width(text: str) -> int:
    """Columns ``text`` takes in a proportional font, roughly: a CJK (East Asian wide) character counts 2."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def text_px(text: str, size: float, em: float = 0.62) -> float:
    """About how wide ``text`` (HTML-escaped or not) is drawn at ``size`` px: ``em`` a column, 0.62 generously
    for :data:`transformer_core.figures.stage.FONT` (a CJK character counts two columns, :func:`display_width`)."""
    return display_width(html.unescape(text)) * em * size


def wrap(text: str, size: float, max_px: float, em: float = 0.62) -> list[str]:
    """Plain ``text`` cut at spaces into lines of at most ``max_px`` at ``size`` px (:func:`text_px`); a word
    longer than a line is cut."""
    lines: list[str] = []
    for word in text.split(" "):
        pieces = []
        while len(word) > 1 and text_px(word, size, em) > max_px:  # a long word (or a Chinese sentence): cut it
            cut = max([i for i in range(1, len(word)) if text_px(word[:i], size, em) <= max_px] or [1])
            pieces.append(word[:cut])
            word = word[cut:]
        for piece in pieces + [word]:
            if lines and text_px(f"{lines[-1]} {piece}", size, em) <= max_px:
                lines[-1] = f"{lines[-1]} {piece}"
            else:
                lines.append(piece)
    return [line for line in lines if line.strip()]
