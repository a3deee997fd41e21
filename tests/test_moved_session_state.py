"""A session moved to another replica (ui/shell/failover.py) on its first run, simulated in
AppTest: the websocket asked for an old session id this server lacks, and the browser sent no widget state.

Every section that reads a URL-bound key before its widget is drawn must get a value (no KeyError), and the
sidebar's controls, greyed out or not, come back from the URL, not from the widgets' defaults."""
from __future__ import annotations

import pytest

from apptest_utils import new_app
from test_page_minilm import needs_minilm


@pytest.fixture
def moved(monkeypatch):
    """Every new session in this test is a moved one (its first run only, as on a real server)."""
    from ui.shell import failover

    monkeypatch.setattr(failover, "asked_for_old_session", lambda header: True)


def open_moved(page: str, sent: dict | None = None, **query):
    """``sent``: widget values the browser resends on that first run (here: set as session state before it)."""
    at = new_app(**query)
    for key, value in (sent or {}).items():
        at.session_state[key] = value
    (at.switch_page(page) if page else at).run()  # None: the default page (the explorer, at /)
    return at


def errors(at) -> list[str]:
    return [e.value for e in at.exception]


MINILM_LINKS = [
    {"text": "the cat sat on the mat\na dog ran", "ablate": "L3H7"},
    {"text": "the cat sat on the mat\na dog ran", "ablate": "L3H7", "ablate_layer": "5"},
    {"text": "the cat sat on the mat", "pair": "2,3", "layer": "1", "head": "4"},
    {"text": "the cat sat on the mat", "pair": "2,3", "view": "rollout", "stage": "norms", "color": "previous_token"},
]


@needs_minilm
@pytest.mark.parametrize("query", MINILM_LINKS, ids=["ablate", "ablate_layer", "pair", "pair_views"])
def test_moved_minilm_session_has_no_keyerror_and_keeps_the_links_values(moved, query):
    # the sentences' text area is live on this page, so the browser resends its value
    at = open_moved("pages/minilm.py", sent={"shared_text": query["text"]}, **query)
    assert not at.exception, errors(at)
    assert any("Reconnected to another server" in m.value for m in at.info)
    for key, value in query.items():  # nothing in the link was overwritten by a widget default
        assert at.query_params[key] == value, (key, at.query_params[key], value)
    at.run()  # the next click: the URL is read as usual
    assert not at.exception, errors(at)
    for key, value in query.items():
        assert at.query_params[key] == value, (key, at.query_params[key], value)



def _notice(at) -> bool:
    return any("Reconnected to another server" in m.value for m in at.info)


def test_the_notice_stays_when_the_resync_rerun_follows_a_students_click(moved):
    """On a real page the hidden resync button's rerun (ui.shell.failover.resync_on_reconnect) can arrive after a
    click of the student's that was already the moved run: that rerun must not take the notice away (CI saw it go)."""
    from ui.shell import failover

    at = open_moved(None)
    assert _notice(at)                                       # the moved run
    at.button(key=failover.RESYNC_KEY).click().run()
    assert not at.exception and _notice(at)                  # the resync right after it: said again
    at.run()
    assert not _notice(at)                                   # the student's next click: gone, as before
    at.session_state["_moved_at"] = at.session_state["_moved_at"] - failover.RESYNC_SECONDS - 1
    at.button(key=failover.RESYNC_KEY).click().run()
    assert not _notice(at)                                   # a reconnect long after the move is not a move


def test_a_resync_rerun_of_a_session_that_never_moved_says_nothing():
    from ui.shell import failover

    at = new_app().run()
    at.button(key=failover.RESYNC_KEY).click().run()
    assert not at.exception and not _notice(at)
