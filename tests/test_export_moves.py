"""attention-export --stage norms and --view rollout|flow: the files hold the numbers an independent
recomputation gives; bad requests exit 2 with one line."""
from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from transformer_core.analysis.rollout import FLOW_TOKEN_LIMIT, attention_flow, attention_rollout
from transformer_core.analysis.value_norms import split_output_projection
from transformer_core.cli.export import main
from transformer_core.models.causal import run_causal
from transformer_core.models.toy import run_toy
from transformer_core.nn.config import EncoderConfig
from transformer_core.nn.encoder import Encoder


def test_stage_norms_csv_is_alpha_times_the_norm_of_v_through_the_seeded_W_O(tmp_path, capsys):
    out = tmp_path / "n.csv"
    assert main(["--text", "the cat sat on the mat", "--stage", "norms", "--n-layers", "2", "--layer", "1",
                 "--head", "3", "--format", "csv", "--out", str(out)]) == 0
    got = pd.read_csv(out).iloc[:, -6:].to_numpy()  # labelled matrix: 6 query rows × 6 keys
    config = EncoderConfig(d_model=64, n_heads=8, n_layers=2, d_ff=256, seed=0)
    trace = run_toy(["the cat sat on the mat"], config)
    W_O = Encoder(config).layers[1].attention.W_O.weight.detach().double().numpy().T  # concat @ W_O
    v, alpha = trace.stage("v", 1)[0, 3].astype(np.float64), trace.stage("weights", 1)[0, 3].astype(np.float64)
    f = np.linalg.norm(v @ split_output_projection(W_O, 8)[3], axis=-1)  # ‖v_j W_O^3‖ per key
    np.testing.assert_allclose(got, alpha * f[None, :], atol=1e-6)


def test_view_rollout_json_and_csv_of_the_causal_model(tmp_path):
    ids = "5 17 3 9 5 17 3 9"
    out = tmp_path / "r.json"
    assert main(["--model", "causal", "--text", ids, "--view", "rollout", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    trace = run_causal([int(t) for t in ids.split()])
    means = np.stack([trace.stage("weights", l)[0].astype(np.float64).mean(0) for l in range(2)])
    np.testing.assert_allclose(doc["values"], attention_rollout(means), atol=1e-9)
    np.testing.assert_allclose(np.array(doc["values"]).sum(1), 1.0)
    np.testing.assert_allclose(doc["last_layer_mean_weights"], means[-1], atol=1e-9)
    assert doc["view"] == "rollout" and doc["tokens"] == ids.split()
    csv = tmp_path / "r.csv"
    assert main(["--model", "causal", "--text", ids, "--view", "rollout", "--out", str(csv)]) == 0
    frame = pd.read_csv(csv, index_col=0)
    assert frame.shape == (8, 8) and frame.index[2] == "2: 3"
    assert frame.index.name == "output \\ input"  # the corner says what rows and columns are (it was empty)


def test_view_says_which_one_layer_options_it_ignores(capsys):
    ids = "1 2 3 1 2 3"
    assert main(["--model", "causal", "--text", ids, "--view", "rollout", "--format", "csv", "--out", "-"]) == 0
    assert "ignored" not in capsys.readouterr().err
    assert main(["--model", "causal", "--text", ids, "--view", "rollout", "--head", "2", "--layer", "1",
                 "--format", "csv", "--out", "-"]) == 0
    err = capsys.readouterr().err
    assert "--view rollout combines every layer and head; ignored: --layer, --head" in err


def test_view_flow_csv_matches_attention_flow(tmp_path, capsys):
    assert main(["--model", "causal", "--text", "1 2 3 1 2 3", "--view", "flow", "--format", "csv", "--out", "-"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out), index_col=0)
    trace = run_causal([1, 2, 3, 1, 2, 3])
    means = np.stack([trace.stage("weights", l)[0].astype(np.float64).mean(0) for l in range(2)])
    np.testing.assert_allclose(frame.to_numpy(), attention_flow(means), atol=1e-8)


@pytest.mark.parametrize("argv, message", [
    (["--text", " ".join(f"w{i}" for i in range(FLOW_TOKEN_LIMIT + 1)), "--view", "flow", "--format", "csv"],
     f"at most {FLOW_TOKEN_LIMIT} tokens"),
    (["--text", "a b", "--stage", "norms", "--layer", "3", "--format", "csv"], "--layer 3 out of range"),
    (["--text", "a b", "--view", "sideways"], "invalid choice"),
])
def test_bad_requests_exit_2_with_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
