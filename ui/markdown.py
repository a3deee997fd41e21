"""User text inside Streamlit Markdown (notes, radio labels) must stay text: escape it."""
from __future__ import annotations

import re

# Markdown and Streamlit's extras ($ for LaTeX, : for emoji/icons shortcodes)
_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!<>|~$:])")


def plain(text: str) -> str:
    """``"**hi** [x](y)"`` → ``"\\*\\*hi\\*\\* \\[x\\]\\(y\\)"``: shown literally, never rendered."""
    return _SPECIAL.sub(r"\\\1", str(text))
