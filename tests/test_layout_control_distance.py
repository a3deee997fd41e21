"""The layout audit's control-to-figure check (tests/layout_probe.control_distances), from made-up boxes: a control
beside or just above its figure is near, one a screen or more away is far unless it sticks under the header or
brings its figure into view on a change."""
from __future__ import annotations

from layout_probe import FAR_PX, control_distances


def box(top, bottom, sticky=False):
    return {"top": top, "bottom": bottom, "sticky": sticky}


def test_controls_are_classified_by_their_gap_to_the_figure():
    boxes = {"stage": box(220, 260), "focus": box(296, 718), "kv": box(460, 500), "scale": box(752, 800),
             "ablate_click": box(502, 530), "result": box(3952, 4252), "step": box(398, 430, sticky=True),
             "heads": box(1087, 1467), "old_kv": box(2018, 2060)}
    found = control_distances(boxes, [("stage", "focus"), ("kv", "focus"), ("scale", "focus"),
                                      ("ablate_click", "result"), ("step", "heads"), ("old_kv", "focus"),
                                      ("ablate_click", "result", "into view"), ("gone", "focus")])
    assert found["near"] == [("stage", "focus", 36), ("kv", "focus", 0), ("scale", "focus", 34)]
    assert found["far"] == [("ablate_click", "result", 3422), ("old_kv", "focus", 1300)]
    assert found["stuck"] == [("step", "heads", 657)] and found["into_view"] == [("ablate_click", "result", 3422)]
    assert found["missing"] == [("gone", "focus")]


def test_the_threshold_is_inclusive_and_can_be_changed():
    boxes = {"c": box(0, 100), "f": box(100 + FAR_PX, 900), "g": box(101 + FAR_PX, 900)}
    found = control_distances(boxes, [("c", "f"), ("c", "g")])
    assert found["near"] == [("c", "f", FAR_PX)] and found["far"] == [("c", "g", FAR_PX + 1)]
    assert control_distances(boxes, [("c", "g")], far_px=1000)["near"] == [("c", "g", FAR_PX + 1)]
