"""A minimal Streamlit websocket client (asyncio, `websockets` — a Streamlit dependency).

Speaks Streamlit's own protocol: opens ``/_stcore/stream``, sends ``BackMsg.rerun_script`` with a
query string, page and widget states, and reads ``ForwardMsg``s until ``script_finished``. Widgets are
found by label in the deltas, so an interaction is "set the widget labelled X to V and rerun".
Used by benchmarks/load_class.py and tests/test_deploy_nginx.py. Server-side time only: no
browser drawing.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

WIDGETS = ("checkbox", "selectbox", "radio", "number_input", "text_area", "text_input", "slider",
           "button", "segmented_control", "button_group", "multiselect", "download_button")


def _has(p, name: str) -> bool:
    try:
        return p.HasField(name)
    except ValueError:
        return False


def current_state(kind: str, p, held: WidgetState | None) -> WidgetState | None:
    """The value the browser holds for a widget the server just sent (None: not tracked): the
    server's value when it sets one (``set_value``), else the one held before, else the default."""
    if held is not None and not getattr(p, "set_value", False):
        return held
    w = WidgetState()
    w.id = p.id
    if kind == "checkbox":
        w.bool_value = p.value if p.set_value else p.default
    elif kind in ("text_area", "text_input"):
        w.string_value = p.value if _has(p, "value") else p.default
    elif kind == "selectbox":
        if _has(p, "raw_value"):
            w.string_value = p.raw_value
        elif _has(p, "default") and p.options:
            w.string_value = p.options[p.default]
        else:
            return None
    elif kind == "number_input":
        value = p.value if _has(p, "value") else p.default
        if p.data_type == p.INT:
            w.int_value = int(value)
        else:
            w.double_value = value
    else:  # radio, segmented control, select slider, tabs, …: not tracked (the server keeps the last value)
        return None
    return w


@dataclass
class Run:
    seconds: float
    payload: bytes          # every ForwardMsg of the run, concatenated (for leak checks)
    exceptions: list[str]   # st.exception / script errors shown to the user
    status: str             # script_finished status name
    fragment: str = ""      # the fragment that ran alone (ui/shell/fragments.py), "" for a run of the whole page


@dataclass
class StreamlitSession:
    url: str                      # http://host:port
    cookie: str | None = None     # e.g. "ae_route=…" (nginx stickiness)
    widgets: dict = field(default_factory=dict)    # label -> (kind, proto)
    pages: dict = field(default_factory=dict)      # url_pathname -> page_script_hash
    page_hash: str = ""
    session_id: str = ""
    upstream: str | None = None   # X-AE-Upstream of the websocket handshake (behind nginx)
    ws: object = None
    query_string: str = ""        # the URL's query string, as the browser would keep it
    states: dict = field(default_factory=dict)     # widget id -> WidgetState the "browser" holds
    fragments: dict = field(default_factory=dict)  # label -> id of the fragment that drew the widget ("" = none)

    async def connect(self, timeout: float = 60, resume: str | None = None) -> None:
        """Open the websocket; ``resume``: ask for an old session id, as the browser does when it
        reconnects (``Sec-WebSocket-Protocol: streamlit, <xsrf token>, <session id>``)."""
        ws_url = self.url.replace("http://", "ws://", 1) + "/_stcore/stream"
        headers = {"Cookie": self.cookie} if self.cookie else {}
        self.ws = await websockets.connect(ws_url, additional_headers=headers, max_size=None,
                                           open_timeout=timeout, ping_interval=None,
                                           subprotocols=["streamlit", "none", resume] if resume else ["streamlit"])
        resp = getattr(self.ws, "response", None)
        if resp is not None:
            self.upstream = resp.headers.get("X-AE-Upstream")

    def label_of(self, key: str) -> str | None:
        """The label of the last run's widget with the user ``key`` (its id ends in "-key"), None if not drawn."""
        return next((label for label, (_kind, proto) in self.widgets.items() if proto.id.endswith("-" + key)), None)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def rerun(self, query_string: str | None = None, widget_states: list | None = None,
                    page: str | None = None, timeout: float = 300) -> Run:
        """Send one rerun and read until the script finishes; ``widget_states``: [(label, value)]."""
        back = BackMsg()
        cs = back.rerun_script
        cs.query_string = self.query_string if query_string is None else query_string
        if page is not None:
            cs.page_script_hash = self.pages.get(page, "")
            cs.page_name = page
        elif self.page_hash:
            cs.page_script_hash = self.page_hash
        # Like the browser: send every widget of the last run with the value it holds, then the change.
        states = {}
        for label, (kind, proto) in self.widgets.items():
            w = current_state(kind, proto, self.states.get(proto.id))
            if w is not None:
                states[label] = self.states[proto.id] = w
        for label, value in widget_states or []:
            kind, proto = self.widgets[label]
            w = WidgetState()
            w.id = proto.id
            if kind in ("download_button", "button"):  # a click: a trigger, as the browser sends it
                if getattr(proto, "ignore_rerun", False):  # on_click="ignore": the browser only fetches proto.url
                    continue
                w.trigger_value = bool(value)
            elif isinstance(value, (list, tuple)):  # segmented control, select slider: the chosen options' labels
                w.string_array_value.data.extend(map(str, value))
            elif isinstance(value, bool):
                w.bool_value = value
            elif kind in ("selectbox", "radio"):
                opts = list(proto.options)
                if kind == "selectbox":
                    w.string_value = str(value) if str(value) in opts else opts[int(value)]
                else:  # radio: index into options, as the browser sends it
                    w.int_value = opts.index(str(value)) if str(value) in opts else int(value)
            elif isinstance(value, float):
                w.double_value = value
            elif isinstance(value, int):
                w.int_value = value
            else:
                w.string_value = str(value)
            states[label] = w
            if not w.HasField("trigger_value"):  # a click is sent once, as the browser does, not with every later run
                self.states[proto.id] = w
        for w in states.values():
            cs.widget_states.widgets.add().CopyFrom(w)
        # like the browser: a change to a widget inside a fragment reruns only that fragment (st.fragment)
        owners = {self.fragments.get(label, "") for label, _value in widget_states or []}
        fragment = owners.pop() if len(owners) == 1 and page is None and query_string is None else ""
        cs.fragment_id = fragment
        if not fragment:
            self.widgets = {}  # every run sends all of its elements again: keep only the latest run's
        t0 = time.perf_counter()
        await self.ws.send(back.SerializeToString())
        chunks, exceptions = [], []
        deadline = t0 + timeout
        while True:
            raw = await asyncio.wait_for(self.ws.recv(), max(0.1, deadline - time.perf_counter()))
            if isinstance(raw, str):
                continue
            chunks.append(raw)
            msg = ForwardMsg()
            msg.ParseFromString(raw)
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                self.session_id = msg.new_session.initialize.session_id or self.session_id
            elif kind == "navigation":
                self.pages = {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}
                self.page_hash = msg.navigation.page_script_hash
            elif kind == "page_info_changed":  # st.query_params changed: the browser's URL follows
                self.query_string = msg.page_info_changed.query_string
            elif (kind == "delta" and msg.delta.WhichOneof("type") == "add_block"
                  and msg.delta.add_block.WhichOneof("type") == "expandable" and msg.delta.add_block.expandable.id):
                box = msg.delta.add_block.expandable  # a keyed expander (on_change="rerun"): a widget, bool_value
                self.widgets[box.label] = ("expander", box)
                self.fragments[box.label] = msg.delta.fragment_id
            elif (kind == "delta" and msg.delta.WhichOneof("type") == "add_block"
                  and msg.delta.add_block.WhichOneof("type") == "tab_container"
                  and msg.delta.add_block.tab_container.id):
                tabs = msg.delta.add_block.tab_container  # keyed st.tabs(on_change="rerun"): the open tab's label
                self.widgets[tabs.id] = ("tabs", tabs)  # no label of its own: found by key (label_of)
                self.fragments[tabs.id] = msg.delta.fragment_id
            elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                el = msg.delta.new_element
                t = el.WhichOneof("type")
                if t in WIDGETS and getattr(getattr(el, t), "label", None):
                    self.widgets[getattr(el, t).label] = (t, getattr(el, t))
                    self.fragments[getattr(el, t).label] = msg.delta.fragment_id
                elif t == "exception":
                    exceptions.append(f"{el.exception.type}: {el.exception.message}")
            elif kind == "script_finished":
                status = ForwardMsg.ScriptFinishedStatus.Name(msg.script_finished)
                if status == "FINISHED_EARLY_FOR_RERUN":  # st.rerun / switch_page: keep reading
                    continue
                return Run(time.perf_counter() - t0, b"".join(chunks), exceptions, status, fragment)
