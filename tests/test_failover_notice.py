"""A page that comes back on another server says so (ui/failover.py), and only then."""
from __future__ import annotations

import asyncio
import sys
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from st_session import StreamlitSession  # noqa: E402

from ui.failover import asked_for_old_session  # noqa: E402

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
