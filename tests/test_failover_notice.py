"""A page that comes back on another server says so (ui/shell/failover.py), and only then."""
from __future__ import annotations

import asyncio
import sys
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from st_session import StreamlitSession  # noqa: E402

from ui.shell import nav  # noqa: E402
from ui.shell.failover import asked_for_old_session  # noqa: E402

NOTICE = b"Reconnected to another server"


def test_the_old_session_id_is_the_third_protocol_entry():
    assert asked_for_old_session("streamlit, tok, 5f0c-old-session")
    assert not asked_for_old_session("streamlit")
    assert not asked_for_old_session("streamlit, tok")
    assert not asked_for_old_session("streamlit, tok, ")
    assert not asked_for_old_session(None)


async def _open(url: str, resume: str | None = None) -> tuple[StreamlitSession, bytes]:
    s = StreamlitSession(url)
    await s.connect(resume=resume)
    run = await s.rerun(urllib.parse.urlencode({"text": "the cat sat on the mat"}))
    assert run.status == "FINISHED_SUCCESSFULLY" and not run.exceptions
    return s, run.payload


def test_notice_only_when_the_server_lacks_the_old_session(server):
    async def scenario():
        fresh, payload = await _open(server)                      # a link opened: no notice
        assert NOTICE not in payload
        again = await fresh.rerun(widget_states=[("Causal mask", True)])
        assert NOTICE not in again.payload                          # nor on later runs
        old_id = fresh.session_id
        await fresh.close()
        resumed, payload = await _open(server, resume=old_id)     # a blip: same server resumes it
        assert resumed.session_id == old_id and NOTICE not in payload
        await resumed.close()
        moved, payload = await _open(server, resume="3c9e0d4a-dead-replica-session")  # moved here
        assert moved.session_id != "3c9e0d4a-dead-replica-session" and NOTICE in payload
        later = await moved.rerun(widget_states=[("Causal mask", True)])
        assert NOTICE not in later.payload                          # said once
        await moved.close()

    asyncio.run(scenario())


PAGES = tuple(p.served_at for p in nav.PAGES)  # every registered page; "" = the explorer, the default page
# a link per page (tests/test_page_registry.py checks that every page of nav.PAGES has one)
QUERIES = {"": {"text": "the cat sat on the mat", "stage": "weights", "head": "1"},
           "minilm": {"text": "the cat sat", "layer": "2", "head": "3"},
           "causal": {"seq": "5 17 3 9 5 17 3 9", "period": "4", "seq_seed": "7", "checkpoint": "4000"},
           "masks_lab": {"text": "the cat sat", "section": "Padding"},
           "pipeline": {"text": "the cat sat", "step": "Concat"},
           "modern": {"text": "the cat sat", "section": "KV cache", "model": "causal", "step": "3"},
           "llm": {"prompt": "the cat sat on the", "layer": "2", "head": "3", "stage": "scores"},
           "guided": {"text": "the cat sat", "lesson": "2", "step": "3"}}


def test_every_page_survives_a_moved_session_whose_first_run_has_no_widget_states(server):
    """A browser that reconnects to a server lacking its session, on any of the five pages, and
    whose first rerun carries no widget state (the causal page once raised KeyError 'causal_period')."""
    async def scenario(page: str):
        s = StreamlitSession(server)
        await s.connect(resume="3c9e0d4a-dead-replica-session")
        run = await s.rerun(urllib.parse.urlencode(QUERIES[page]), page=page or None)
        assert run.status == "FINISHED_SUCCESSFULLY" and not run.exceptions, (page, run.exceptions)
        assert NOTICE in run.payload
        later = await s.rerun()                                    # the next click: the URL is read as usual
        assert later.status == "FINISHED_SUCCESSFULLY" and not later.exceptions, (page, later.exceptions)
        await s.close()
        return run.payload + later.payload

    for page in PAGES:
        payload = asyncio.run(scenario(page))
        assert b"KeyError" not in payload and b"Traceback" not in payload, page
    causal = asyncio.run(scenario("causal"))
    assert b"5 17 3 9 5 17 3 9" in causal  # the sequence came back from the URL, nothing lost
    QUERIES["causal"].pop("seq")  # no sequence in the URL: it is made from the period and seed (KeyError before)
    asyncio.run(scenario("causal"))
