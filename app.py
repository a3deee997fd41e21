"""Attention Explorer — entrypoint: `streamlit run app.py`.

Sends the page navigation first, then draws the shared sidebar (so its state persists across
pages), then runs the chosen page. The heavy imports (torch, via ``ui.shell.controls``) come after
``st.navigation``, so a fresh server's first visitor sees the menu while they load.
"""
import streamlit as st

from ui.llm import catalog
from ui.shell import diagnostics, failover, i18n, nav
from ui.shell.i18n import _

# this run's language (?lang=, the sidebar switch, or the browser's): the menu and every page follow it
st.set_page_config(page_title=_("Attention Explorer"), page_icon="🔍", layout="wide")
# Streamlit leaves 6rem above a page's title; 3.5rem still clears its 60-px header and gives every page's first screen
# 40 px more (the explorer's focused head ends above a 720-px screen's edge with its caption). A style takes no room.
st.html("<style>[data-testid='stMainBlockContainer']{padding-top:3.5rem}</style>")
if nav.in_legacy_mode():  # a fresh process's first run: Streamlit's pages/ mode (see ui/shell/nav.py)
    nav.leave_legacy_mode(rerun=True)
page = nav.navigation({"llm": title} if (title := catalog.menu_title()) else None)
diagnostics.maybe_report()  # only with AE_DIAGNOSTICS=1 (tests, operators)
failover.notice_if_moved()  # a page that came back on another replica says so
if nav.is_alias(page):  # /explorer?… → /?… (the explorer is the default page)
    page.run()

from ui.shell import controls  # noqa: E402  (after the navigation on purpose: this imports torch)

i18n.setup_package()  # figures and texts built in transformer_core speak the session's language too

st.session_state["_settings"] = controls.sidebar(page.url_path)  # controls that do nothing on the page: disabled
failover.resync_on_reconnect()  # a page whose connection comes back reruns whole (its fragments are unknown elsewhere)
page.run()

from ui.shell import url  # noqa: E402

url.settle_moved_run()  # a moved session's first run: rerun if a resent widget differs from the URL's value
