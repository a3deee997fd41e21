"""Every --width/--height the command line accepts (16–4,096) either draws the slide or is refused in one line that
names the smallest size that works, with exit 2; that size really works, and one pixel less does not. (Small
canvases used to end in a ZeroDivisionError traceback inside the slide's layout.)"""
from __future__ import annotations

import re

import pytest

from transformer_core.cli import export
from transformer_core.figures.slide import MIN_CELL_PX, SlideTooSmall, build_figure

SIZES = [(16, 16), (1280, 16), (1280, 150), (150, 720), (4096, 16), (16, 4096), (300, 200)]
NEED = re.compile(r"the smallest size that works here is (\d+)×(\d+) px \(--width \1 --height \2\)")


def toy_trace():
    args = export.build_parser().parse_args(["--text", "When Mary and John went to the store"])
    return export.build_trace(args)


def check_refusal_or_drawing(trace, width: int, height: int, head=None) -> None:
    try:
        fig = build_figure(trace, "weights", batch=0, layer=0, head=head, width=width, height=height)
    except SlideTooSmall as err:
        need_w, need_h = err.need
        assert need_w >= width and need_h >= height
        assert NEED.search(str(err)).groups() == (str(need_w), str(need_h))
        fig = build_figure(trace, "weights", batch=0, layer=0, head=head, width=need_w, height=need_h)
        smaller = [(need_w - 1, need_h)] if need_h == height else [(need_w, need_h - 1)] if need_w == width else []
        for w, h in smaller:  # one pixel less on the side that grew: refused again
            with pytest.raises(SlideTooSmall):
                build_figure(trace, "weights", batch=0, layer=0, head=head, width=w, height=h)
        width, height = need_w, need_h
    slide = fig.layout.meta["slide"]
    assert slide["cell"] >= MIN_CELL_PX
    for left, top, right, bottom in slide["panels"]:  # every panel inside the canvas
        assert 0 <= left < right <= width and 0 <= top < bottom <= height


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("head", [None, 0])
def test_toy_slide_at_small_sizes(size, head):
    check_refusal_or_drawing(toy_trace(), *size, head=head)


def test_the_default_size_draws_the_largest_grid():
    """64 heads of 512 tokens: the smallest cells the command line can ask for, still drawn at 1280×720."""
    args = export.build_parser().parse_args(["--text", " ".join(f"w{i}" for i in range(600)), "--max-tokens", "512",
                                             "--n-heads", "64", "--d-model", "64"])
    fig = build_figure(export.build_trace(args), "weights", batch=0, layer=0, head=None)
    assert MIN_CELL_PX <= fig.layout.meta["slide"]["cell"] < 0.2


@pytest.mark.parametrize("size", SIZES)
def test_smollm2_slide_at_small_sizes(size, smollm2_or_skip):
    args = export.build_parser().parse_args(["--model", "smollm2", "--text", "When Mary"])
    check_refusal_or_drawing(export.build_trace(args), *size)


@pytest.mark.parametrize("size", [(16, 16), (1280, 16), (150, 720)])
def test_the_command_line_refuses_in_one_line_with_exit_2(size, tmp_path, capsys):
    out = tmp_path / "w.png"
    code = export.main(["--text", "When Mary", "--width", str(size[0]), "--height", str(size[1]), "--out", str(out),
                        "--lang", "en"])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert len(err.strip().splitlines()) == 1 and err.startswith("export: error: a ")
    assert NEED.search(err)
    code = export.main(["--text", "When Mary", "--width", "16", "--height", "16", "--out", str(out), "--lang", "zh"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "最小尺寸" in err
    assert re.search(r"--width \d+ --height \d+", err)
