"""The export writes only what it has checked: no empty image at a tiny --scale, no PNG/SVG that is not
one, one line when standard output is closed, a legal long file name, the system's errors in the asked language,
and no Chromium start-up noise before the export's own error. Each case failed on the code before."""
from __future__ import annotations

import errno
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from transformer_core.cli import export

ROOT = Path(__file__).resolve().parent.parent
TEXT = ["--text", "the cat sat"]


def _png(width: int = 2, height: int = 1) -> bytes:
    """A real PNG, made by hand: signature, IHDR, one IDAT, IEND."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + b"\xff\xff\xff" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def _cli(*argv: str, cwd: Path, env: dict | None = None, shell_tail: str = "") -> subprocess.CompletedProcess:
    """``python -m transformer_core.cli ARGV`` in a shell (so ``>&-`` can close its standard output)."""
    import shlex

    command = shlex.join([sys.executable, "-m", "transformer_core.cli", *argv]) + shell_tail
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "LANG": "C.UTF-8", **(env or {})})


@pytest.mark.parametrize("argv", [
    ["--head", "0", "--scale", "0.001"],  # kaleido returned 3 bytes, written as x.png with exit 0
    ["--head", "0", "--scale", "1e-9"],
    ["--head", "0", "--scale", "0.001", "--format", "svg"],
    ["--model", "minilm", "--view", "rollout", "--scale", "1e-300"],
], ids=["0.001", "1e-9", "svg", "minilm-rollout-1e-300"])
def test_a_scale_that_draws_nothing_is_refused_and_nothing_is_written(argv, tmp_path, capsys):
    out = tmp_path / ("x.svg" if "svg" in argv else "x.png")
    assert export.main([*TEXT, *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("export: error: --scale ") and "empty" in err and "\n" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_the_empty_scale_message_is_in_the_asked_language(tmp_path, capsys):
    assert export.main([*TEXT, "--scale", "0.001", "--lang", "zh", "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("export：错误：") and "--scale 0.001" in err and "empty" not in err, err


def test_the_smallest_scale_it_suggests_draws_a_pixel():
    export.check_draws_pixels(1280, 720, 1 / 720)
    with pytest.raises(export.UsageError) as refused:
        export.check_draws_pixels(700, 720, 0.001)
    least = float(str(refused.value).split("--scale ")[-1].split()[0])
    export.check_draws_pixels(700, 720, least)  # the suggestion itself passes


@pytest.mark.parametrize("data, fmt, why", [
    (b"\x89PN", "png", "3 bytes without the PNG signature"),  # what --scale 0.001 wrote
    (b"", "png", "0 bytes"),
    (_png()[:20], "png", "without a PNG header"),
    (_png()[:29] + b"\0\0\0\0" + _png()[33:], "png", "damaged"),
    (_png(0, 1), "png", "0×1 px"),
    (b"<svg xmlns='http://www.w3.org/2000/svg'><g></svg>", "svg", "not well-formed XML"),
    (b"<html/>", "svg", "no <svg> element"),
], ids=["3-bytes", "empty", "cut", "bad-crc", "zero-width", "svg-broken", "svg-not-svg"])
def test_an_image_that_is_not_one_is_never_written(data, fmt, why, tmp_path):
    out = tmp_path / f"x.{fmt}"
    out.write_bytes(b"the old file")
    with pytest.raises(export.ExportError) as refused:
        export.write_output(out, data, fmt)
    assert why in str(refused.value) and "nothing was written" in str(refused.value)
    assert out.read_bytes() == b"the old file" and [p.name for p in tmp_path.iterdir()] == ["x." + fmt]


def test_a_real_png_and_svg_are_written(tmp_path):
    export.write_output(tmp_path / "x.png", _png(), "png")
    export.write_output(tmp_path / "x.svg", b'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>', "svg")
    assert (tmp_path / "x.png").read_bytes() == _png()


@pytest.mark.parametrize("lang, said", [("en", "export: error: cannot write to standard output: it is closed"),
                                        ("zh", "export：错误：")])
def test_a_closed_standard_output_is_one_line_and_exit_1(lang, said, tmp_path):
    result = _cli(*TEXT, "--format", "csv", "--out", "-", "--lang", lang, cwd=tmp_path, shell_tail=" >&-")
    assert result.returncode == 1, result
    assert result.stderr.startswith(said) and result.stderr.count("\n") == 1, result.stderr  # was a traceback
    assert "Traceback" not in result.stderr and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["a" * 246 + ".csv", "猫" * 82 + ".csv"], ids=["ascii-250", "chinese-250"])
def test_a_legal_250_byte_file_name_is_written(name, tmp_path, capsys):
    assert len(name.encode()) == 250
    assert export.main([*TEXT, "--format", "csv", "--out", str(tmp_path / name)]) == 0, capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary .part left either
    assert export.temp_prefix(tmp_path / name).encode().__len__() + 8 + len(".part") <= 255


@pytest.mark.parametrize("lang, said", [("en", "No space left on device"), ("zh", "设备上没有空间")])
def test_the_systems_errors_are_said_in_the_asked_language(lang, said, tmp_path, capsys, monkeypatch):
    def full_disk(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export.os, "replace", full_disk)
    out = tmp_path / "x.csv"
    assert export.main([*TEXT, "--format", "csv", "--lang", lang, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert said in err and (lang == "en" or "No space" not in err), err
    assert list(tmp_path.iterdir()) == []
    raw = OSError(errno.EACCES, "Permission denied", "/x")  # one raised by a library, not by the export
    with export.use_language(lang):
        assert export._message(raw) == ("/x: Permission denied" if lang == "en" else "/x: 权限不足")


def test_a_chromium_that_fails_to_start_gives_only_the_exports_error(tmp_path):
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\necho 'chromium noise' >&2\nexit 3\n")
    fake.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    result = _cli(*TEXT, "--head", "0", "--out", "x.png", cwd=work, env={"BROWSER_PATH": str(fake)})
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    # one line: no "Wait expired, Browser is being closed by watchdog." before it
    assert len(lines) == 1 and lines[0].startswith("export: error: PNG export failed"), result.stderr
    assert list(work.iterdir()) == []
