"""The sidebar's "Chart camera button saves" choice reaches every chart's camera: with "svg" chosen, no chart on any
registered page saves PNG (the MiniLM and causal overviews, the loss curve, the masks lab and the pipeline used to,
their configs built without the choice)."""
from __future__ import annotations

import json

import pytest
from apptest_utils import charts, new_app

from ui.shell import chart as chart_module
from ui.shell import nav

PAGES = ["app.py", *(p.script for p in nav.PAGES[1:])]  # every registered page (the first one is the app's default)


def camera_formats(at) -> list[str]:
    return [json.loads(c.proto.config)["toImageButtonOptions"]["format"] for c in charts(at)]


@pytest.mark.parametrize("page", PAGES)
def test_every_chart_saves_the_chosen_format(page):
    at = new_app(text="the cat sat on the mat")
    at.session_state["shared_image_format"] = "svg"
    if page != "app.py":
        at.switch_page(page)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    formats = camera_formats(at)
    assert formats and set(formats) == {"svg"}, (page, formats)
    at.session_state["shared_image_format"] = "png"
    at.run()
    assert set(camera_formats(at)) == {"png"}


def test_a_config_built_without_the_choice_gets_it(monkeypatch):
    monkeypatch.setattr(chart_module.st, "session_state", {"shared_image_format": "svg"})
    config = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": "x", "scale": 2}}
    assert chart_module.with_image_format(config)["toImageButtonOptions"] == {"format": "svg", "filename": "x",
                                                                              "scale": 2}
    assert config["toImageButtonOptions"]["format"] == "png"  # a copy: a shared config is not changed
    assert chart_module.with_image_format({"displaylogo": False}) == {"displaylogo": False}
    assert chart_module.with_image_format(None) is None
    monkeypatch.setattr(chart_module.st, "session_state", {"shared_image_format": "gif"})
    assert chart_module.image_format() == "png"
