"""Page list for ``st.navigation``, the ``/explorer`` deep link, and the first-visitor fix.

Two Streamlit behaviours shape this module (both checked in Chromium by
``tests/test_browser_navigation.py``):

* The default page lives at ``/``: Streamlit gives it the URL pathname ``""``, answers
  ``/explorer`` with "Page not found", and the frontend rewrites the address of the default
  page to ``/``. So ``/explorer`` is a hidden alias page that switches to the explorer
  (``st.switch_page``) with the link's query parameters.
* A process whose entrypoint has a ``pages/`` folder beside it starts in the legacy
  "pages directory" mode until some session calls ``st.navigation`` ("As soon as any session
  of your app executes the st.navigation command, your app will ignore the pages/ directory
  (across all sessions)", ``st.navigation`` docs). So the first run of a fresh process shows
  the file-name menu (``app``, ``explorer``, ``masks lab``) and, for a deep link, runs the page
  script without ``app.py``. ``client.showSidebarNavigation = false`` in
  ``.streamlit/config.toml`` hides that menu; :func:`navigation` turns the sidebar menu back on
  (``st.set_option``) for the real one, and :func:`leave_legacy_mode` ends the legacy mode
  with a plain ``st.navigation`` call and reruns. No Streamlit internals are touched.
  On a deep link that first run starts in the page script itself, so every page opens with
  :func:`enter_through_app` before its heavy imports (torch, ~2–3 s): the menu with the real
  titles is then the first thing the very first visitor sees.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from .i18n import N_, _

ROOT = Path(__file__).resolve().parents[2]
PAGES = (  # (script, title, icon, url_path); the first one is the default page, served at "/"
    ("pages/explorer.py", N_("Explorer"), ":material/grid_on:", "explorer"),
    ("pages/minilm.py", N_("Trained model (MiniLM)"), ":material/psychology:", "minilm"),
    ("pages/causal.py", N_("Trained causal model"), ":material/trending_down:", "causal"),
    ("pages/masks_lab.py", N_("Masks lab"), ":material/visibility_off:", "masks_lab"),
    ("pages/pipeline.py", N_("Multi-head pipeline"), ":material/account_tree:", "pipeline"),
    ("pages/modern.py", N_("Attention since 2017"), ":material/update:", "modern"),
    ("pages/llm.py", N_("Real LLM (SmolLM2)"), ":material/chat:", "llm"),
    ("pages/guided.py", N_("Guided lessons"), ":material/school:", "guided"),
)
# The default page's url_path only names it internally (Streamlit serves it at "/" and
# hashes the url_path into the page id); "explorer" belongs to the alias below.
DEFAULT_PAGE_ID = "home"

# Set once this process has called st.navigation: from then on Streamlit ignores pages/.
_navigated = False


def _found() -> list[tuple[str, str, str, str]]:
    return [p for p in PAGES if (ROOT / p[0]).exists()]


def _follow_alias() -> None:
    """``/explorer`` → the explorer at ``/``, with every query parameter of the link."""
    params = {key: st.query_params.get_all(key) for key in st.query_params}
    st.switch_page(pages()[0], query_params=params)


def pages() -> list:
    """``st.Page`` objects for the scripts that exist, then the default page's hidden alias."""
    found = _found()
    out = [st.Page(script, title=_(title), icon=icon, url_path=DEFAULT_PAGE_ID if i == 0 else url, default=(i == 0))
           for i, (script, title, icon, url) in enumerate(found)]
    if found:
        _script, title, icon, url = found[0]
        out.append(st.Page(_follow_alias, title=_(title), icon=icon, url_path=url, visibility="hidden"))
    return out


def navigation():
    """``st.navigation`` with the sidebar menu on (config.toml hides the legacy one)."""
    global _navigated
    st.set_option("client.showSidebarNavigation", True)
    page = st.navigation(pages())
    _navigated = True
    return page


def in_legacy_mode() -> bool:
    """True until this process has called ``st.navigation`` (the ``pages/`` folder exists)."""
    return not _navigated and (ROOT / "pages").is_dir()


def is_alias(page) -> bool:
    """The page ``st.navigation`` returned is the default page's alias (it only redirects)."""
    found = _found()
    return bool(found) and page.url_path == found[0][3]


def leave_legacy_mode(rerun: bool) -> None:
    """End the legacy ``pages/`` mode for the whole process, then rerun through ``app.py``.

    Called by ``app.py`` on a fresh process's first run, and by ``ui.shell.controls.current`` when a
    page script ran without the entrypoint (a legacy deep-link run).
    """
    navigation()
    if rerun:
        st.rerun()


def enter_through_app() -> None:
    """First lines of every page script: a fresh process's legacy deep-link run (the page run
    without ``app.py``) ends the legacy mode and reruns through ``app.py`` at once, before the
    page imports torch. Does nothing otherwise."""
    if in_legacy_mode():
        leave_legacy_mode(rerun=True)
