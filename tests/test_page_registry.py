"""Pages are registered once, in ``ui/shell/nav.py``'s ``PAGES``; every list of pages elsewhere derives from it or is
checked against it here.

A test or script that visits each page keeps a table of what is page-specific (a link, its URL parameters, its tabs,
the start of its h1); its page list is the registry, and this test fails when a registered page has no row in one of
those tables (a new page would otherwise go unguarded in Chinese, URL, moved-session and failover tests) or when a
row names a page the registry does not have. Fast: the modules are imported, nothing is run.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest

from ui.shell import controls, nav
from ui.shell.i18n import _

ROOT = Path(__file__).resolve().parent.parent


def _module(path: str):
    """A test module by name, or a script by its path (imported once, not run)."""
    if not path.endswith(".py"):
        return importlib.import_module(path)
    name = "registry_check_" + Path(path).stem
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _aud(module) -> list[str]:
    return [case[0] for case in module.AUDITED]


# (where, what names the pages there): each must name every registered page
TABLES = {
    "test_url_property.PARAMS": ("test_url_property", lambda m: m.PARAMS),
    "test_i18n_pages.PAGES": ("test_i18n_pages", lambda m: m.PAGES),
    "test_failover_notice.QUERIES": ("test_failover_notice", lambda m: m.QUERIES),
    "test_moved_session_settings.LINKS": ("test_moved_session_settings", lambda m: m.LINKS),
    "test_browser_navigation.H1": ("test_browser_navigation", lambda m: m.H1),
    "test_browser_class_view.AUDITED": ("test_browser_class_view", _aud),
    "scripts/layout_audit.py PAGES": ("scripts/layout_audit.py", lambda m: m.PAGES),
    "scripts/screenshot_pages.py PAGES": ("scripts/screenshot_pages.py", lambda m: m.PAGES),
    "scripts/screenshot_pages.py ZH_PAGES": ("scripts/screenshot_pages.py", lambda m: m.ZH_PAGES),
}
# lists that visit some pages on purpose (the pages that offer MiniLM's WordPiece tokens): only names of pages
SUBSETS = {
    "test_wordpiece_unavailable.PAGES": ("test_wordpiece_unavailable", lambda m: m.PAGES),
}


def page_of(name: str) -> nav.Page | None:
    """The registered page a table's key names: a script path, a url_path, ``/path`` or ``""`` (the default)."""
    if name.endswith(".py"):
        return next((p for p in nav.PAGES if p.script == name), None)
    return nav.find(name.strip("/"))


def problems(names, extra_screens: bool = False) -> list[str]:
    """What is wrong with a table naming ``names``: registered pages it lacks, names that are no page."""
    named = {page_of(str(n)) for n in names}
    out = [f"no row for {p.url_path!r}" for p in nav.PAGES if p not in named]
    if not extra_screens:
        out += [f"{n!r} is not a registered page" for n in names if page_of(str(n)) is None]
    return out


@pytest.mark.parametrize("table", list(TABLES))
def test_every_page_driven_table_names_every_registered_page(table):
    where, names = TABLES[table]
    # the screenshot script also names extra views of a page ("explain", "explorer_128_tokens")
    assert problems(list(names(_module(where))), extra_screens="screenshot" in table) == []


@pytest.mark.parametrize("table", list(SUBSETS))
def test_a_deliberate_subset_names_only_registered_pages(table):
    where, names = SUBSETS[table]
    assert [n for n in names(_module(where)) if page_of(n) is None] == []


def test_a_page_added_to_the_registry_but_not_to_a_table_is_reported(monkeypatch):
    """The check above on a registry with one page more: every table lacks it."""
    new = nav.Page("pages/new.py", "New", ":material/new_releases:", "new", "ui.new")
    monkeypatch.setattr(nav, "PAGES", (*nav.PAGES, new))
    for where, names in TABLES.values():
        found = problems(list(names(_module(where))), extra_screens=True)
        assert found == ["no row for 'new'"], (where, found)
    assert problems(["pages/explorer.py", "/gone"]) == [f"no row for {p.url_path!r}" for p in nav.PAGES[1:]] + \
        ["'/gone' is not a registered page"]


def test_the_registry_is_consistent():
    paths = [p.url_path for p in nav.PAGES]
    assert len(set(paths)) == len(paths) and nav.DEFAULT_PAGE_ID not in paths
    assert sorted(p.script for p in nav.PAGES) == sorted(f"pages/{f.name}" for f in (ROOT / "pages").glob("*.py"))
    for page in nav.PAGES:
        assert (ROOT / page.room.replace(".", "/")).is_dir(), page.room
        assert _(page.title, "zh") != page.title, page.title  # the menu title is translated
        if page.sidebar is not None:  # a page that greys out sidebar controls says why, in both languages
            assert page.sidebar <= set(controls.URL_KEYS) and page.sidebar_note, page.url_path
            assert _(page.sidebar_note, "zh") != page.sidebar_note
    assert nav.PAGES[0].served_at == "" and nav.find("") is nav.PAGES[0] and nav.find("nowhere") is None


def test_the_sidebar_greys_out_what_the_registry_says():
    minilm = nav.find("minilm")
    assert controls.applies("minilm") == ({"text", "padding"}, minilm.sidebar_note)
    assert controls.applies("llm")[0] == set() and controls.applies("")[0] == set(controls.URL_KEYS)
    assert controls.applies("masks_lab") == (set(controls.URL_KEYS), "")


def test_a_registry_entry_is_all_it_takes_to_grey_out_a_control(monkeypatch):
    pages = tuple(dataclasses.replace(p, sidebar=frozenset({"text"}), sidebar_note="why")
                  if p.url_path == "pipeline" else p for p in nav.PAGES)
    monkeypatch.setattr(nav, "PAGES", pages)
    assert controls.applies("pipeline") == ({"text"}, "why")
