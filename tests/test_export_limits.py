"""The export command states its limits in --help and checks them before any work:
exit 2 with one line, never a traceback, a 40 GB allocation or a 92-second run."""
from __future__ import annotations

import time

import pytest

from transformer_core.cli import export

WORDS_600 = " ".join(["w"] * 600)


def test_help_states_every_limit(capsys):
    assert export.main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for phrase in ("width of every token vector, 1–1,024", "attention heads, 1–64", "encoder layers, 1–12",
                   "this many tokens, 1–512", "image width in px, 16–4,096", "a number in (0, 4]",
                   "at most 100,000,000 captured numbers", "25,000,000 for --format json", "at most 64 sentences",
                   "at most 8192 px a side after scaling"):
        assert phrase in text, phrase


@pytest.mark.parametrize("argv, message", [
    (["--d-model", "100000", "--n-heads", "1"], "export: error: argument --d-model: 100000 is outside 1..1,024"),
    (["--n-layers", "100000"], "export: error: argument --n-layers: 100000 is outside 1..12"),
    (["--max-tokens", "3000"], "export: error: argument --max-tokens: 3000 is outside 1..512"),
    (["--max-tokens", "0"], "export: error: argument --max-tokens: 0 is outside 1..512"),
    (["--n-heads", "65"], "export: error: argument --n-heads: 65 is outside 1..64"),
    (["--seed", "-1"], "export: error: argument --seed: -1 is outside 0..2,147,483,647"),
    (["--scale", "inf"], "export: error: argument --scale: inf is not a number in (0, 4]"),
    (["--scale", "nan"], "export: error: argument --scale: nan is not a number in (0, 4]"),
    (["--scale", "-1"], "export: error: argument --scale: -1 is not a number in (0, 4]"),
    (["--scale", "x"], "export: error: argument --scale: invalid float value: 'x'"),
    (["--width", "100000"], "export: error: argument --width: 100000 is outside 16..4,096"),
    (["--width", "4096", "--scale", "4"], "export: error: the image would be 16384×2880 px; at most 8192 px a side"),
    (["--text", WORDS_600, "--d-model", "1024", "--n-heads", "64", "--n-layers", "12", "--max-tokens", "512"],
     "export: error: this run would capture 680,001,536 numbers (1 sentence × 512 tokens, 12 layers, 64 heads, "
     "d_model 1024); at most 100,000,000: use fewer or shorter sentences, a lower --max-tokens, fewer layers or "
     "heads, or a smaller --d-model"),
    (["--text", WORDS_600, "--max-tokens", "512", "--d-model", "512", "--n-heads", "16", "--n-layers", "4",
      "--format", "json"],
     "export: error: this run would capture 63,176,704 numbers (1 sentence × 512 tokens, 4 layers, 16 heads, "
     "d_model 512); at most 25,000,000 for JSON: use fewer or shorter sentences, a lower --max-tokens, fewer "
     "layers or heads, or a smaller --d-model"),
    (["--text", "\n".join(["a"] * 65)], "export: error: 65 sentences; at most 64 per export"),
])
def test_limits_are_checked_before_any_work(argv, message, tmp_path, capsys):
    if "--text" not in argv:
        argv = ["--text", "the cat sat"] + argv
    if "--format" not in argv:
        argv = argv + ["--format", "csv"]
    start = time.perf_counter()
    code = export.main(argv + ["--out", str(tmp_path / f"x.{argv[argv.index('--format') + 1]}")])
    err = capsys.readouterr().err
    assert (code, err) == (2, message + "\n")
    assert time.perf_counter() - start < 2.0  # refused before the model runs
    assert not list(tmp_path.iterdir())


def test_the_budget_counts_the_numbers_a_run_really_captures(tmp_path):
    """The formula in --help is exact: compare it with a real toy trace."""
    from transformer_core import EncoderConfig, run_toy

    trace = run_toy(["the cat sat on the mat", "a dog"], EncoderConfig(d_model=16, n_heads=4, d_ff=64, n_layers=3))
    n, b, layers, heads, d = len(trace.tokens[0]), 2, 3, 4, 16
    assert sum(a.size for a in trace.stages.values()) == layers * b * (3 * heads * n * n + 12 * n * d) + b * n * d


def test_a_run_inside_the_limits_still_works(tmp_path, capsys):
    out = tmp_path / "x.csv"
    assert export.main(["--text", WORDS_600, "--max-tokens", "512", "--d-model", "64", "--n-heads", "2",
                        "--format", "csv", "--head", "1", "--out", str(out)]) == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == 1 + 512  # header + one row per query
