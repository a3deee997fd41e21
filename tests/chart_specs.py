"""The Plotly charts of an AppTest page, drawn by our element or by st.plotly_chart, read the same way."""
from __future__ import annotations

import json
from types import SimpleNamespace

from ui.shell.chart import NAME


def charts(at) -> list:
    """Every Plotly chart on the page, our element's (ui/shell/chart.py) or st.plotly_chart's (its fallback), each
    with ``.proto.spec`` (the figure's JSON) and ``.proto.config`` (JSON) as st.plotly_chart's proto has them."""
    ours = []
    for element in at.get("bidi_component"):
        if element.proto.component_name == NAME:
            data = json.loads(element.proto.json)
            ours.append(SimpleNamespace(proto=SimpleNamespace(spec=json.dumps(data["figure"]),
                                                              config=json.dumps(data["config"]))))
    return [*ours, *at.get("plotly_chart")]
