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

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from .i18n import N_, _

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Page:
    """One page of the app: the single place a page is registered.

    The menu, the sidebar's greyed-out controls, the import-direction test's rooms and every test or script that
    visits each page (Chinese, URL parameters, moved sessions, failover, the layout audit, the docs screenshots)
    read this list, so a new page added here is one the tests must cover (``tests/test_page_registry.py``).

    ``script``: the page script's path from the repository root. ``title``: the menu title (marked with ``N_``,
    translated where shown). ``url_path``: its URL (the first page's is an alias: Streamlit serves it at ``/``).
    ``room``: the ``ui`` package holding the page's own modules (several pages may share one). ``sidebar``: the
    shared sidebar controls that apply on the page (None: all of them); the others are drawn disabled with
    ``sidebar_note``, marked with ``N_``, as the reason (a disabled widget cannot rerun the page and keeps its value
    for the other pages).
    """

    script: str
    title: str
    icon: str
    url_path: str
    room: str
    sidebar: frozenset[str] | None = None
    sidebar_note: str = ""

    @property
    def served_at(self) -> str:
        """The path Streamlit serves the page at, without the slash: ``""`` for the default page."""
        return "" if self is PAGES[0] else self.url_path


PAGES = (  # the first one is the default page, served at "/"
    Page("pages/explorer.py", N_("Explorer"), ":material/grid_on:", "explorer", "ui.explorer"),
    Page("pages/minilm.py", N_("Trained model (MiniLM)"), ":material/psychology:", "minilm", "ui.minilm",
         frozenset({"text", "padding"}),
         N_("Greyed out here: MiniLM has its own WordPiece tokenizer, sizes (d_model = 384, 12 heads) and trained "
            "weights, and attends in both directions. The sentences and the padding mask apply.")),
    Page("pages/causal.py", N_("Trained causal model"), ":material/trending_down:", "causal", "ui.causal",
         frozenset(),
         N_("Greyed out here: this page runs its own token sequence on the trained causal model; the sidebar's "
            "settings apply on the other pages.")),
    Page("pages/masks_lab.py", N_("Masks lab"), ":material/visibility_off:", "masks_lab", "ui.lessons"),
    Page("pages/pipeline.py", N_("Multi-head pipeline"), ":material/account_tree:", "pipeline", "ui.lessons"),
    Page("pages/modern.py", N_("Attention since 2017"), ":material/update:", "modern", "ui.modern",
         frozenset({"text"}),
         N_("Greyed out here: the positions tab scores the first sentence with its own head (word-level tokens, "
            "d_model = 384); the other tabs bring their own models and inputs.")),
    Page("pages/llm.py", N_("Real LLM (SmolLM2)"), ":material/chat:", "llm", "ui.llm", frozenset(),
         N_("Greyed out here: the real model reads its own prompt with its own tokenizer, sizes and trained "
            "weights; the sidebar's settings apply on the other pages.")),
    Page("pages/guided.py", N_("Guided lessons"), ":material/school:", "guided", "ui.guided"),
)


def find(url_path: str) -> Page | None:
    """The registered page whose ``url_path`` this is (the default page also by ``""``), else None."""
    return next((p for p in PAGES if url_path in (p.url_path, p.served_at)), None)


# The default page's url_path only names it internally (Streamlit serves it at "/" and
# hashes the url_path into the page id); "explorer" belongs to the alias below.
DEFAULT_PAGE_ID = "home"

# Set once this process has called st.navigation: from then on Streamlit ignores pages/.
_navigated = False


def _found() -> list[Page]:
    return [p for p in PAGES if (ROOT / p.script).exists()]


def _follow_alias() -> None:
    """``/explorer`` → the explorer at ``/``, with every query parameter of the link."""
    params = {key: st.query_params.get_all(key) for key in st.query_params}
    st.switch_page(pages()[0], query_params=params)


def menu_titles(titles: dict[str, str] | None = None) -> dict[str, str]:
    """``{url_path: the menu's title in the session's language}`` for every registered page, ``titles`` (marked
    with ``N_``) replacing the registered ones where given."""
    titles = titles or {}
    return {p.url_path: _(titles.get(p.url_path, p.title)) for p in PAGES}


def pages(titles: dict[str, str] | None = None) -> list:
    """``st.Page`` objects for the scripts that exist, then the default page's hidden alias. ``titles``: a menu title
    (marked with ``N_``) for a page's ``url_path`` that replaces its registered one on this server (the real-LLM
    page's title names SmolLM2 only while SmolLM2 is its one model)."""
    found, shown = _found(), menu_titles(titles)
    out = [st.Page(p.script, title=shown[p.url_path], icon=p.icon,
                   url_path=DEFAULT_PAGE_ID if i == 0 else p.url_path, default=(i == 0))
           for i, p in enumerate(found)]
    if found:
        first = found[0]
        out.append(st.Page(_follow_alias, title=_(first.title), icon=first.icon, url_path=first.url_path,
                           visibility="hidden"))
    return out


def navigation(titles: dict[str, str] | None = None):
    """``st.navigation`` with the sidebar menu on (config.toml hides the legacy one); ``titles`` as :func:`pages`."""
    global _navigated
    st.set_option("client.showSidebarNavigation", True)
    page = st.navigation(pages(titles))
    _navigated = True
    return page


def in_legacy_mode() -> bool:
    """True until this process has called ``st.navigation`` (the ``pages/`` folder exists)."""
    return not _navigated and (ROOT / "pages").is_dir()


def is_alias(page) -> bool:
    """The page ``st.navigation`` returned is the default page's alias (it only redirects)."""
    found = _found()
    return bool(found) and page.url_path == found[0].url_path


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
