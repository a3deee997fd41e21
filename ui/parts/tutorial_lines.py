"""The tutorials' own lines beside the numbers (:mod:`transformer_core.analysis.tutorial_lines`).

One small code block per stage: each seed line with its comment in the learner's language (in Chinese,
the tutorial's own words), and, on the English page, that comment's Chinese original under its translation.
"""
from __future__ import annotations

import streamlit as st

from transformer_core.analysis.tutorial_lines import lines_for

from ..shell.i18n import _, language
from ..shell.markdown import plain


def show(stage: str, target=st) -> None:
    """The seed lines that compute ``stage``; nothing for a stage the tutorials do not write out."""
    lines = lines_for(stage)
    if not lines:
        return
    seed = _("seed")  # "seed 000" in English, "教程 000" in Chinese
    target.caption(_("The tutorials' line that computes this:"))
    # Inline code, not st.code: a code block pulls Streamlit's 1.5 MB syntax highlighter (0.4 MB compressed)
    # into a link's first visit, for a few lines that need no colours.
    # elsewhere than in Chinese, each tutorial's own (Chinese) comment stands under its translation, so a reader
    # sees which Chinese says what
    said = _("in the tutorial's words")
    target.markdown("  \n".join(
        f"`{line.code}`  \n{plain(seed)} {line.seed}: {plain(line.text())}"
        + ("" if language() == "zh" else f"  \n:gray[{plain(said)}: “{plain(line.original())}”]") for line in lines))
