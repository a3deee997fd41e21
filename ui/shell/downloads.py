"""Download buttons that never fail silently after a failover, nor under a loaded server.

A download button's file lives in the memory of the server that drew the page (``/media/<id>``, or a deferred
file id). When that replica dies, the page stays on screen, reconnected to another replica, and its buttons
still point at the dead one until the page reruns: a click got a 404 that Chromium cancels without a word. So
a button whose file is built in the run reruns the page when clicked (``on_click="rerun"``, Streamlit's
default). On a healthy server the file arrives and the rerun redraws the page from its caches; on a moved
session the click is that session's first run (ui/shell/failover.py): the page is drawn anew with links to this
server, and the button says the file did not come and must be clicked again.

A button whose file is built only when clicked (``data`` a callable: Streamlit's deferred download) does not
rerun (``on_click="ignore"``). Streamlit 1.67 answers a deferred click with a message in the session's queue,
and a run that starts clears that queue of all but its lifecycle messages (``ForwardMsgQueue.clear``): when the
click's own rerun started just after the answer was queued, the answer was dropped and the button spun forever
(CI saw it once, clicking as the box of downloads opened; here 1 click in 12 under three busy cores). A moved
page's deferred buttons point at this server once the resync run (ui/shell/failover.py) has drawn it, a few
seconds after the reconnect; a click before that should get Streamlit's "Failed to generate file for download"
under the button (its DeferredFileHandler's answer to an unknown id).
"""
from __future__ import annotations

import streamlit as st

from .failover import AGAIN, moved_this_run
from .i18n import N_, _, language

CSV_HEADERS = N_("The column headers stay English, like the JSON keys and the export command's files, so that a "
                 "script or spreadsheet that reads one file reads them all, whichever language made it.")


def download_button(target, label: str, data, *, key: str, **kwargs) -> bool:
    """``target.download_button(label, data, key=key, **kwargs)``; ``target``: ``st`` or a column.

    ``data`` bytes or text: the click reruns the page, and on a moved session's first run the button says the
    click must be repeated. ``data`` a callable (built when clicked): the click does not rerun (see the module's
    docstring). Returns whether it was clicked (always False for a callable)."""
    kwargs.pop("on_click", None)
    if kwargs.get("mime") == "text/csv" and language() != "en":  # the headers are English on purpose: say why
        kwargs.setdefault("help", _(CSV_HEADERS))
    deferred = callable(data)
    clicked = target.download_button(label, data, key=key, on_click="ignore" if deferred else "rerun", **kwargs)
    if clicked and moved_this_run():
        st.session_state["_moved_download"] = True  # kept if the run is redrawn at once (failover.notice_if_moved)
        target.warning(_(AGAIN), icon=":material/download:")
        # and where it is seen for sure: a button inside an expander is hidden again when the page is redrawn
        st.toast(_(AGAIN), icon=":material/download:", duration="long")
    return clicked
