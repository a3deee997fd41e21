"""`attention-export --model causal`: the trained causal model's numbers out as CSV/JSON."""
from __future__ import annotations

import json

import numpy as np

from transformer_core.models.causal import run_causal
from transformer_core.cli.export import main


def test_csv_equals_model(tmp_path):
    out = tmp_path / "w.csv"
    assert main(["--model", "causal", "--text", "5 17 3 9 5 17 3 9", "--layer", "1", "--head", "1",
                 "--format", "csv", "--out", str(out)]) == 0
    lines = out.read_text(encoding="utf-8-sig").splitlines()  # a CSV file starts with a byte-order mark (Excel)
    assert lines[0].startswith("query \\ key,0: 5,1: 17")
    rows = np.array([[float(x) if x else np.nan for x in line.split(",")[1:]] for line in lines[1:9]])
    expected = run_causal([5, 17, 3, 9, 5, 17, 3, 9]).stages["layers.1.attention.weights"][0, 1]
    np.testing.assert_allclose(np.nan_to_num(rows), expected, atol=1e-6)
    assert np.isnan(rows[np.triu_indices(8, 1)]).all()  # causal mask: blank above the diagonal


def test_json_step_and_no_causal(tmp_path):
    out = tmp_path / "t.json"
    assert main(["--model", "causal", "--text", "1 2 1 2", "--step", "200", "--no-causal", "--format", "json",
                 "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["settings"]["model"] == "causal" and data["settings"]["step"] == 200
    assert data["settings"]["causal"] is False


def test_bad_arguments_exit_2(capsys):
    assert main(["--model", "causal", "--text", "5 cat"]) == 2
    assert "'cat' is not a token id" in capsys.readouterr().err
    assert main(["--model", "causal", "--text", "5 1", "--step", "7"]) == 2
    assert "no checkpoint at step 7" in capsys.readouterr().err
    assert main(["--model", "causal", "--text", "5 1", "--d-model", "8"]) == 2
    assert main(["--text", "the cat", "--step", "200"]) == 2
    assert main(["--model", "causal", "--text", " ".join(["1"] * 49)]) == 2
    # two sequences are not joined into one longer one without a word (elsewhere a second --text is a batch)
    assert main(["--model", "causal", "--text", "1 2 3", "--text", "4 5 6"]) == 2
    assert "reads one sequence of token ids, got 2" in capsys.readouterr().err
