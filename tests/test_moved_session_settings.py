"""A session moved to another replica keeps the link's settings on its first run, including the
sidebar controls greyed out on the page (they used to come back as the widgets' defaults and be written into the
URL: text empty, d_model 8, n_heads 1). Simulated in AppTest as in tests/test_moved_session_state.py."""
from __future__ import annotations

import pytest
from apptest_utils import new_app  # noqa: F401
from test_moved_session_state import errors, moved, open_moved  # noqa: F401  (moved: the fixture)
from test_page_minilm import needs_minilm

from ui.shell import nav

SHARED = {"text": "my own sentence\nsecond one", "d_model": "32", "n_heads": "4", "padding": "0", "causal": "1",
          "seed": "3", "tokenizer": "word"}
SIDEBAR = ("text", "tokenizer", "d_model", "n_heads", "causal", "padding", "seed")
# one rich link per registered page (tests/test_page_registry.py checks that every page of nav.PAGES has one): every
# shared setting off its default, and the page's own view parameters
LINKS = {
    "pages/explorer.py": {"stage": "scores", "head": "2", "scale": "auto", "all": "1", "sentence": "1"},
    "pages/minilm.py": {"layer": "2", "head": "3", "stage": "scores"},
    "pages/causal.py": {"seq": "5 17 3 9 5 17 3 9", "period": "4", "seq_seed": "7", "checkpoint": "4000",
                        "temp": "0.5", "top_k": "5", "pred_pos": "6", "sample_seed": "3"},
    "pages/masks_lab.py": {"section": "Two conventions", "head": "3", "sentence": "1"},
    "pages/pipeline.py": {"step": "Concat and W_O"},
    "pages/modern.py": {"section": "Positions", "alibi_head": "5", "query": "1", "key": "0"},
    "pages/llm.py": {"prompt": "the cat sat on the", "layer": "2", "head": "3", "stage": "scores"},
    "pages/guided.py": {"lesson": "2", "step": "3"},
}
NEEDS = {"pages/minilm.py": [needs_minilm]}  # a page whose model may be missing here is skipped, not dropped


@pytest.mark.parametrize("page, own", [pytest.param(p.script, LINKS[p.script], marks=NEEDS.get(p.script, []),
                                                    id=p.url_path) for p in nav.PAGES])
def test_moved_session_keeps_every_setting_of_the_link(moved, page, own):
    """Item 2: the sidebar's settings (greyed out on /causal and /modern) and the page's own parameters come back
    from the URL on a moved session's first run; before, the text came back empty, d_model 8 and n_heads 1."""
    query = {**SHARED, **own}
    at = open_moved(None if page == nav.PAGES[0].script else page, **query)  # None: the default page, at /
    assert not at.exception, errors(at)
    assert any("Reconnected to another server" in m.value for m in at.info)
    got = {key: at.query_params.get(key) for key in query}
    assert got == query
    assert at.session_state["shared_text"] == SHARED["text"] and at.session_state["shared_d_model"] == 32
    assert at.session_state["shared_n_heads"] == 4 and at.session_state["shared_padding"] is False
    at.run()  # the next click, on the settled session
    assert not at.exception, errors(at)
    assert {key: at.query_params.get(key) for key in query} == query


@needs_minilm
def test_moved_minilm_session_keeps_the_greyed_out_sizes(moved):
    """On /minilm d_model went 64 → 8 and n_heads 8 → 1 (the bug): the greyed-out sizes keep the URL's values."""
    at = open_moved("pages/minilm.py", sent={"shared_text": "the cat sat"}, text="the cat sat", d_model="64",
                    n_heads="8", seed="5")
    assert not at.exception, errors(at)
    assert (at.query_params["d_model"], at.query_params["n_heads"], at.query_params["seed"]) == ("64", "8", "5")


def test_on_a_real_server_the_click_that_moved_the_session_counts_and_the_link_stays(server):
    """The same on a real server, through Streamlit's protocol (benchmarks/st_session.py): the browser resends the
    widget values it holds, with one click (the sampling seed 3 → 7) that reaches the new replica. The click counts
    (the page reran once if a section had read the URL's older value) and every other setting is the link's."""
    import asyncio
    import urllib.parse

    from test_failover_notice import NOTICE, StreamlitSession

    query = {**SHARED, "seq": "5 17 3 9 5 17 3 9", "temp": "0.5", "sample_seed": "3"}

    async def scenario():
        before = StreamlitSession(server)
        await before.connect()
        run = await before.rerun(urllib.parse.urlencode(query), page="causal")
        assert not run.exceptions, run.exceptions
        await before.close()
        after = StreamlitSession(server)  # the browser, reconnected to a server that lacks its session
        after.widgets, after.states, after.pages = before.widgets, before.states, before.pages
        after.page_hash, after.query_string = before.page_hash, before.query_string
        await after.connect(resume="3c9e0d4a-dead-replica-session")
        run = await after.rerun(widget_states=[("Sampling seed", 7)])
        assert run.status == "FINISHED_SUCCESSFULLY" and not run.exceptions, run.exceptions
        assert NOTICE in run.payload
        got = dict(urllib.parse.parse_qsl(after.query_string))
        await after.close()
        return got

    got = asyncio.run(scenario())
    assert got["sample_seed"] == "7"
    assert {k: got.get(k) for k in query if k != "sample_seed"} == {k: v for k, v in query.items() if k != "sample_seed"}


def test_a_download_clicked_as_the_page_moved_reruns_it_and_says_to_click_again(server):
    """Item 3: the click on a download button of a page whose replica died reaches the new replica (the button
    reruns the page), which draws the page with links to itself and says at the button that the file did not
    come; the next click downloads from this server. Before, the button ignored the click (on_click="ignore"):
    its old /media/ link got a 404 that Chromium cancels, and nothing on the page said so."""
    import asyncio
    import urllib.parse

    from test_failover_notice import NOTICE, StreamlitSession

    label = "⬇ Predictions as CSV"
    query = {"seq": "5 17 3 9 5 17 3 9", "temp": "0.5", "preds": "1"}  # the predictions box open (ui/shell/lazy.py)

    async def scenario():
        before = StreamlitSession(server)
        await before.connect()
        run = await before.rerun(urllib.parse.urlencode(query), page="causal")
        assert not run.exceptions and label in before.widgets, (run.exceptions, list(before.widgets))
        assert not before.widgets[label][1].ignore_rerun  # a click reaches the server (on_click="rerun")
        old_url = before.widgets[label][1].url
        healthy = await before.rerun(widget_states=[(label, True)])  # a click on a healthy server: no note
        assert not healthy.exceptions and b"did not come" not in healthy.payload
        await before.close()
        after = StreamlitSession(server)
        after.widgets, after.states, after.pages = before.widgets, before.states, before.pages
        after.page_hash, after.query_string = before.page_hash, before.query_string
        await after.connect(resume="3c9e0d4a-dead-replica-session")
        run = await after.rerun(widget_states=[(label, True)])
        assert run.status == "FINISHED_SUCCESSFULLY" and not run.exceptions, run.exceptions
        new_url = after.widgets[label][1].url
        await after.close()
        return run.payload, old_url, new_url

    payload, old_url, new_url = asyncio.run(scenario())
    assert NOTICE in payload and b"this file did not come" in payload
    assert new_url.startswith("/media/")  # the button was drawn again, with a link on this server



def test_a_download_clicked_as_the_page_moved_is_said_again_as_a_toast_when_the_run_is_redrawn(server):
    """Item 3, when the moved run is redrawn at once (a resent widget differs from the link, ui.shell.url
    .settle_moved_run): the redraw clears the first run's toast, so it must toast again. Before, only a warning at
    the top said so, out of view of a button low on the page (CI saw no toast within 120 s)."""
    import asyncio
    import urllib.parse

    from test_failover_notice import NOTICE, StreamlitSession

    label = "⬇ Predictions as CSV"
    query = {"seq": "5 17 3 9 5 17 3 9", "preds": "1"}  # the predictions box open (ui/shell/lazy.py)

    async def scenario():
        before = StreamlitSession(server)
        await before.connect()
        run = await before.rerun(urllib.parse.urlencode(query), page="causal")
        assert not run.exceptions and label in before.widgets
        await before.close()
        after = StreamlitSession(server)
        after.widgets, after.states, after.pages = before.widgets, before.states, before.pages
        after.page_hash, after.query_string = before.page_hash, before.query_string
        await after.connect(resume="5d1f0e4b-dead-replica-session")
        # the seed box holds a value the link does not have: the run is redrawn at once
        run = await after.rerun(widget_states=[(label, True), ("Sampling seed", 7)])
        await after.close()
        return run

    run = asyncio.run(scenario())
    assert run.status == "FINISHED_SUCCESSFULLY" and not run.exceptions, run.exceptions
    redrawn = b"Your sentences, settings and view came back"  # the note at the top, drawn by each of the two runs
    assert run.payload.count(redrawn) == 2, "the moved run was not redrawn: the test does not reach its case"
    # first run: the note at the button and its toast; the redraw: the warning at the top and a toast again
    assert run.payload.count(b"this file did not come") == 4

def test_every_download_button_of_the_app_goes_through_ui_shell_downloads():
    """Item 3, everywhere: the pages' download buttons go through ui.shell.downloads, which alone chooses
    on_click: "rerun" for a file built in the run, "ignore" only for one built on the click (Streamlit's deferred
    download, whose answer the click's own rerun could drop: tests/test_app_explorer.py)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    offenders = []
    for path in sorted([*(root / "ui").rglob("*.py"), *(root / "pages").glob("*.py")]):
        if path.name == "downloads.py":
            continue
        text = path.read_text(encoding="utf-8")
        if ".download_button(" in text or 'on_click="ignore"' in text:
            offenders.append(str(path.relative_to(root)))
    assert not offenders, offenders
