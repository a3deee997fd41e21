"""Download buttons that never fail silently after a failover (issue 33 item 3).

A download button's file lives in the memory of the server that drew the page (``/media/<id>``, or a deferred
file id). When that replica dies, the page stays on screen, reconnected to another replica, and its buttons
still point at the dead one until the page reruns: a click got a 404 that Chromium cancels without a word. So
every download button reruns the page when clicked (``on_click="rerun"``, Streamlit's default). On a healthy
server the file arrives and the rerun redraws the page from its caches; on a moved session the click is that
session's first run (ui/shell/failover.py): the page is drawn anew with links to this server, and the button
says the file did not come and must be clicked again.
"""
from __future__ import annotations

import streamlit as st

from .failover import AGAIN, moved_this_run
from .i18n import _


def download_button(target, label: str, data, *, key: str, **kwargs) -> bool:
    """``target.download_button(label, data, key=key, **kwargs)`` that reruns the page when clicked, and says on
    a moved session's first run that the click must be repeated. ``target``: ``st`` or a column. Returns
    whether it was clicked."""
    kwargs.pop("on_click", None)
    clicked = target.download_button(label, data, key=key, on_click="rerun", **kwargs)
    if clicked and moved_this_run():
        st.session_state["_moved_download"] = True  # kept if the run is redrawn at once (failover.notice_if_moved)
        target.warning(_(AGAIN), icon=":material/download:")
        # and where it is seen for sure: a button inside an expander is hidden again when the page is redrawn
        st.toast(_(AGAIN), icon=":material/download:", duration="long")
    return clicked
