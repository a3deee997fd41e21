"""Issue 33 items 1–2: a session moved to another replica (ui/shell/failover.py) on its first run, simulated in
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

