"""A lazy box opened and closed at once leaves the URL saying what the box shows (ui/shell/url.py, lazy.py).

The browser sends its URL with each rerun request. Closing the box right after opening it sends ``tables=0``
before the open run's ``tables=1`` has reached the browser; the closing run then saw a URL that already agreed
with it and wrote nothing, and the browser's URL went on to say ``tables=1`` under a closed box (the attack
helper saw it, sixth session). Played here over the websocket, as the browser does it, so the order is exact.
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from urllib.parse import parse_qs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from st_session import StreamlitSession  # noqa: E402

BOX = "Tokens, downloads and reopening a saved trace"


def test_a_box_closed_before_its_open_run_reached_the_browser_still_sets_the_url(server):
    async def scenario():
        s = StreamlitSession(server)
        await s.connect()
        first = await s.rerun("text=the+cat&tables=0", page="")
        assert not first.exceptions and BOX in s.widgets, list(s.widgets)
        opened = await s.rerun(widget_states=[(BOX, True)])  # the browser's URL follows: tables=1
        after_open = s.query_string
        stale = after_open.replace("tables=1", "tables=0")  # the request was sent before tables=1 arrived
        closed = await s.rerun(stale, widget_states=[(BOX, False)])
        await s.close()
        return opened, after_open, closed, s.query_string

    opened, after_open, closed, final = asyncio.run(scenario())
    assert not opened.exceptions and not closed.exceptions
    assert parse_qs(after_open)["tables"] == ["1"]
    assert parse_qs(final)["tables"] == ["0"], final  # what the browser's URL says at the end: the box is closed
