"""A clear notice when a student's page comes back on another server (a replica died, or the server restarted).

Streamlit's client reconnects by itself after its websocket drops, asking for its old session in the
third entry of the ``Sec-WebSocket-Protocol`` header (``streamlit, <xsrf token>, <session id>``). The
server that has that session resumes it; any other server (behind nginx, the replica a dead one's
students are moved to) starts a *new* session for it. So a session whose first run arrives with an
old session id was moved: everything in the URL (sentence, model settings, page, head, stage) comes
back by itself, anything else (an uploaded trace, a download) must be redone. A page opened by a
link or typed address sends no old id and gets no notice.

The new session would not run until the student's next click, and a click inside a fragment (a tile, a cell, a
stage) asks for that fragment alone, which the new server has never registered: Streamlit skips it and the click is
lost. So the page reruns itself as soon as its connection comes back (:func:`resync_on_reconnect`): a hidden button
outside every fragment is clicked by a small script, and that full run is the moved session's first. It arrives with
every widget's value as the browser shows it. On that first run the URL is not read (``moved_this_run``),
so the click counts instead of being overwritten by the URL, which still holds the old value.
"""
from __future__ import annotations

import secrets
import time

import streamlit as st

from .i18n import N_, _

MESSAGE = N_("**Reconnected to another server.** The server this page was on went away, so it now runs on "
           "another one. Your sentences, settings and view came back from the page's address; an uploaded "
           "trace has to be uploaded again, and a download clicked as the page moved has to be clicked again.")
AGAIN = N_("The page moved to another server as you clicked, so this file did not come. Click the button again: "
           "it now downloads from this server.")  # said by ui.shell.downloads at the button, and here after a redraw


def asked_for_old_session(protocol_header: str | None) -> bool:
    """Whether a websocket's ``Sec-WebSocket-Protocol`` value carries an old session id (3rd entry)."""
    entries = [e.strip() for e in (protocol_header or "").split(",")]
    return len(entries) >= 3 and bool(entries[2])


def notice_if_moved() -> None:
    """On a session's first run only: a toast (and a note at the top) if the browser asked for a
    session this server does not have. Call from the entrypoint before the page runs.

    ``st.session_state["_failover"]``: None before the first run, then "fresh" or "moved", and
    "settled" from the run after a "moved" one on (the URL is read as usual again)."""
    ss = st.session_state
    phase = ss.get("_failover")
    # the hidden button's rerun soon after a move (it can follow a click of the student's that was the moved run)
    resynced = bool(ss.get(RESYNC_KEY)) and time.monotonic() - ss.get("_moved_at", -1e9) < RESYNC_SECONDS
    redrawn = phase == "moved" and ss.pop("_moved_rerun", False)  # the first run redrawn (ui.shell.url.settle_moved_run)
    if phase == "moved":
        ss["_failover"] = "settled"
    if redrawn or (phase in ("moved", "settled") and resynced):  # a later run of the move says it again
        st.info(_(MESSAGE), icon=":material/sync_problem:")
    if redrawn and ss.pop("_moved_download", False):  # ui.shell.downloads: the click that moved the page was a download
        st.warning(_(AGAIN), icon=":material/download:")
        # again as a toast: the first run's toast is cleared by this redraw, and a button in an expander is hidden
        st.toast(_(AGAIN), icon=":material/download:", duration="long")
    if phase is not None:
        return
    moved = asked_for_old_session(st.context.headers.get("Sec-WebSocket-Protocol"))
    ss["_failover"] = "moved" if moved else "fresh"
    if moved:
        ss["_moved_at"] = time.monotonic()  # this run's widget values come from the browser, not the URL (ui.shell.url)
        st.toast(_("**Reconnected to another server.** Your view came back."), icon=":material/sync_problem:",
                 duration="long")
        st.info(_(MESSAGE), icon=":material/sync_problem:")


def moved_this_run() -> bool:
    """True during the first run of a session that was moved here: the browser already shows
    the view and sends every widget's value (including the click that caused this run), so the
    URL must not overwrite them (it lags that click)."""
    return st.session_state.get("_failover") == "moved"


RESYNC_KEY = "_ae_resync"
RESYNC_SECONDS = 30  # a resync rerun this soon after a move says the notice again
# Streamlit shows stConnectionStatus while its websocket is down; once it is gone again, click the hidden button (a
# full rerun: on another replica, the moved session's first run). Installed once per browser tab. The click is
# checked: every run writes a new mark (``data-run``) into this element, so a click that started no run (the button
# still disabled, or missing while the page redraws; seen on a loaded CI machine) is made again, up to 10 times.
_RESYNC = """<style>.st-key-_ae_resync {display: none;}</style><i class="ae-run" data-run="__RUN__"></i><script>(() => {
  if (window.__aeResync) return;
  window.__aeResync = true;
  const down = () => !!document.querySelector('[data-testid="stConnectionStatus"]');
  const mark = () => (document.querySelector('.ae-run') || {dataset: {}}).dataset.run;
  let lost = false, timer = null;
  const resync = (before, tries) => {
    if (down() || tries <= 0 || mark() !== before) return;  // down again (wait for it), or a run came
    const b = document.querySelector('.st-key-_ae_resync button');
    if (b && !b.disabled) b.click();
    timer = setTimeout(() => { timer = null; resync(before, tries - 1); }, 2500);
  };
  new MutationObserver(() => {
    if (down()) { lost = true; clearTimeout(timer); timer = null; return; }
    if (!lost || timer) return;
    // once, after the status has stayed away for a moment (it can flicker while reconnecting)
    timer = setTimeout(() => {
      timer = null;
      if (down()) return;
      lost = false;
      resync(mark(), 10);
    }, 600);
  }).observe(document.body, {subtree: true, childList: true});
})();</script>"""


def resync_on_reconnect() -> None:
    """In the sidebar, hidden: a button outside every fragment and the script that clicks it when the page's
    connection comes back, so a page moved to another replica is drawn there at once (its notice, its fragments, its
    download links) and a student's next click, inside a fragment too, counts."""
    ss = st.session_state
    ss["_ae_run"] = ss.get("_ae_run", 0) + 1
    ss.setdefault("_ae_session", secrets.token_hex(4))  # a new session (another replica) starts its own marks
    st.sidebar.button("↻", key=RESYNC_KEY)
    st.sidebar.html(_RESYNC.replace("__RUN__", f"{ss['_ae_session']}-{ss['_ae_run']}"), unsafe_allow_javascript=True)
