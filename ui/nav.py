"""Page list for ``st.navigation`` and the fix for its first-visitor glitch.

Streamlit 1.67 decides once per process whether the app "uses a pages directory" (the
legacy, file-name navigation) from the mere existence of ``pages/``; the flag is turned
off by the first ``st.navigation`` call, so the very first visitor of a fresh server gets
legacy labels (``app``, ``explorer``) and a page run outside the entrypoint. We turn the
flag off before the first run finishes and rerun, so that visitor sees the real titles.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent.parent
# url_path = the file's stem, so a legacy first run resolves a deep link to the same page.
PAGES = (  # (script, title, icon, url_path)
    ("pages/explorer.py", "Explorer", ":material/grid_on:", "explorer"),
    ("pages/minilm.py", "Trained model (MiniLM)", ":material/psychology:", "minilm"),
    ("pages/masks_lab.py", "Masks lab", ":material/visibility_off:", "masks_lab"),
    ("pages/pipeline.py", "Multi-head pipeline", ":material/account_tree:", "pipeline"),
)


def leave_legacy_mode(rerun: bool) -> None:
    """Switch off the legacy ``pages/`` navigation if this process still uses it.

    Then rerun, so the run that reaches the browser is the entrypoint's, with its navigation.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        if rerun:
            st.rerun()


def pages() -> list:
    """``st.Page`` objects for the scripts that exist; the explorer is the default page."""
    return [st.Page(script, title=title, icon=icon, url_path=url, default=(i == 0))
            for i, (script, title, icon, url) in enumerate(PAGES) if (ROOT / script).exists()]
