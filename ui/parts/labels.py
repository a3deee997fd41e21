"""Short plain-English labels: sentences cut at a word boundary, plurals, lists of numbers.

Pure text (no Markdown): for ``st.selectbox`` options, which Streamlit shows as plain text,
use these as they are; inside a Markdown note, pass user text through :func:`ui.shell.markdown.plain`.
"""
from __future__ import annotations

from collections.abc import Iterable

import regex

from transformer_core.text.tokenize import cut_graphemes

from ..shell.i18n import _

ELLIPSIS = "…"


def cut(text: str, width: int = 40) -> str:
    """``text`` on one line, at most ``width`` characters: cut at the last word boundary that fits, plus "…".

    ``cut("The road was muddy after the rain", 20)`` → ``"The road was muddy…"``. A single word
    longer than ``width`` (or text with no spaces, such as Chinese) is cut inside it, between two
    user-perceived characters (never between a letter and its accent, nor inside an emoji sequence).
    """
    flat = " ".join(str(text).split())
    if len(flat) <= width:
        return flat
    room = max(width - 1, 1)  # characters before the "…"
    space = flat.rfind(" ", 0, room + 1)
    if space > 0:
        return flat[:space] + ELLIPSIS
    return (cut_graphemes(flat, room) or regex.match(r"\X", flat).group()) + ELLIPSIS  # at least one whole character


def plural(n: int, one: str, many: str | None = None) -> str:
    """``plural(1, "token")`` → ``"1 token"``; ``plural(3, "token")`` → ``"3 tokens"``."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def and_list(items: Iterable) -> str:
    """``[0]`` → ``"0"``; ``[0, 2]`` → ``"0 and 2"``; ``[0, 1, 2]`` → ``"0, 1 and 2"``."""
    words = [str(i) for i in items]
    if len(words) < 2:
        return "".join(words)
    return _("{items} and {last}").format(items=_(", ").join(words[:-1]), last=words[-1])


def spans(positions: Iterable[int]) -> str:
    """``[0, 1, 2, 3, 7]`` → ``"0–3 and 7"``: runs of consecutive positions as ranges (``""`` for none)."""
    runs: list[list[int]] = []
    for p in sorted(positions):
        if runs and p == runs[-1][1] + 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    return and_list(f"{a}–{b}" if b > a else f"{a}" for a, b in runs)


def numbered(one: str, numbers: Iterable[int], many: str | None = None) -> str:
    """``numbered("sentence", [1])`` → ``"sentence 1"``; ``[0, 2]`` → ``"sentences 0 and 2"``."""
    numbers = list(numbers)
    return f"{one if len(numbers) == 1 else (many or one + 's')} {and_list(numbers)}"


def sentence_label(index: int, sentence: str, width: int = 40) -> str:
    """A sentence picker's option: ``"1: The road was muddy…"`` (plain text, for ``st.selectbox``)."""
    return f"{index}: {cut(sentence, width)}"
