"""The export command writes only regular files (or into a folder), checked before any work, so a
FIFO never hangs it; ``--out -`` writes CSV, JSON, SVG or HTML to standard output."""
from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from transformer_core.cli.export import main
from transformer_core.records import serialize

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "transformer_core.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("name", ["f.csv", "f.json", "f.html"])
def test_a_fifo_is_refused_at_once(tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    # hung forever before; the limit only stops a hang (under a load of 24 the start alone took over 30 s)
    done = run("--text", "the cat sat", "--out", str(fifo), timeout=180)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == f"export: error: cannot write {fifo}: it is not a regular file (a named pipe)"


def test_a_device_is_refused(capsys):
    assert main(["--text", "the cat", "--format", "csv", "--out", "/dev/null"]) == 1
    assert capsys.readouterr().err.strip() == ("export: error: cannot write /dev/null: it is not a regular file "
                                               "(a character device)")


@pytest.mark.parametrize("fmt", ["csv", "json", "html"])
def test_dash_writes_to_standard_output(tmp_path, fmt):
    done = subprocess.run([sys.executable, "-m", "transformer_core.cli", "--text", "the cat sat", "--format", fmt,
                           "--out", "-"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "-").exists() and list(tmp_path.iterdir()) == []
    if fmt == "csv":  # no byte-order mark in a pipe (a file gets one: the test below)
        assert done.stdout.startswith("head,query \\ key,0: the,1: cat,2: sat\n0,0: the,")
    elif fmt == "json":
        assert serialize.trace_from_json(done.stdout).tokens == (("the", "cat", "sat"),)
    else:
        assert done.stdout.startswith("<!DOCTYPE html>")


def test_every_json_ends_with_one_newline(tmp_path, capsys):
    """A trace and a view across layers, to a file and to standard output (the SmolLM2 views: test_cli_writes)."""
    for args in ([], ["--view", "rollout"]):
        assert main(["--text", "the cat", "--format", "json", "--out", str(tmp_path / "t.json"), *args]) == 0
        raw = (tmp_path / "t.json").read_bytes()
        assert raw.endswith(b"}\n") and not raw.endswith(b"\n\n"), raw[-20:]
        capsys.readouterr()  # the written path
        assert main(["--text", "the cat", "--format", "json", "--out", "-", *args]) == 0
        assert capsys.readouterr().out.encode() == raw


def test_a_csv_file_starts_with_a_byte_order_mark_for_excel(tmp_path):
    """Excel reads a CSV without the mark in the system's code page (GBK on a Chinese Windows): 猫 would be garbled."""
    out = tmp_path / "w.csv"
    assert main(["--text", "猫 坐 在 垫子 上", "--format", "csv", "--out", str(out)]) == 0
    raw = out.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbfhead,query \\ key,0: \xe7\x8c\xab,")  # BOM, then UTF-8 (猫 = e7 8c ab)
    text = raw.decode("utf-8-sig")
    assert "\ufeff" not in text and text.splitlines()[1].startswith("0,0: 猫,")


def test_a_csv_file_gets_the_mark_whatever_its_extension(tmp_path):
    assert main(["--text", "the cat", "--format", "csv", "--out", str(tmp_path / "w.txt")]) == 0
    assert (tmp_path / "w.txt").read_bytes().startswith(b"\xef\xbb\xbfhead,")
    assert main(["--text", "the cat", "--view", "rollout", "--format", "csv", "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r").read_bytes().startswith(b"\xef\xbb\xbf")
    assert main(["--text", "the cat", "--format", "json", "--out", str(tmp_path / "t.json")]) == 0
    assert (tmp_path / "t.json").read_bytes().startswith(b"{")  # only CSV gets the mark


def test_a_write_that_fails_halfway_keeps_the_old_file(tmp_path, monkeypatch, capsys):
    """A full disk while writing: the old file is untouched and no partial file is left (it was truncated)."""
    out = tmp_path / "keep.csv"
    out.write_text("precious data\n")
    out.chmod(0o640)
    real_fdopen = os.fdopen

    class HalfThenFull(io.FileIO):
        def write(self, data):
            super().write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fdopen", lambda fd, mode="r", *a, **k: HalfThenFull(fd, "wb") if "w" in mode
                        else real_fdopen(fd, mode, *a, **k))
    assert main(["--text", "the cat sat on the mat", "--format", "csv", "--out", str(out)]) == 1
    monkeypatch.undo()
    assert capsys.readouterr().err.strip() == f"export: error: cannot write {out}: No space left on device"
    assert out.read_text() == "precious data\n" and sorted(p.name for p in tmp_path.iterdir()) == ["keep.csv"]
    assert main(["--text", "the cat", "--format", "csv", "--out", str(out)]) == 0  # a good write replaces it
    assert out.read_bytes().startswith(b"\xef\xbb\xbfhead,") and (out.stat().st_mode & 0o777) == 0o640


def test_dash_needs_a_text_format(capsys):
    assert main(["--text", "the cat", "--out", "-"]) == 2
    assert capsys.readouterr().err.strip() == ("export: error: --out - writes to standard output: pass --format csv, "
                                               "json, svg or html (PNG needs a file)")
    assert main(["--text", "the cat", "--format", "png", "--out", "-"]) == 2


def test_svg_to_standard_output(tmp_path):
    pytest.importorskip("kaleido")
    from transformer_core.cli.slides import find_chromium
    if find_chromium() is None:
        pytest.skip("no Chromium")
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["--text", "the cat", "--format", "svg", "--head", "0", "--out", "-"]) == 0
    assert out.getvalue().lstrip().startswith("<svg") and out.getvalue().rstrip().endswith("</svg>")
