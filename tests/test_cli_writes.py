"""``attention-export --view dla|logit-lens|patching`` on SmolLM2: the JSON holds the analyses' own numbers under the
keys the docs name, the attribution sums to the logit difference, the lens's last row is the model's prediction, and
bad requests exit 2 with one line (not --model smollm2, a target that is not one token, no contrast for patching, a
corrupted prompt of another length)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from transformer_core.cli.export import main

IOI = "When Mary and John went to the store, John gave a drink to"


@pytest.fixture(scope="module", autouse=True)
def _smollm2(smollm2_or_skip):
    return smollm2_or_skip


def export_json(capsys, *args) -> dict:
    assert main(["--model", "smollm2", "--text", IOI, "--format", "json", "--out", "-", *args]) == 0
    text = capsys.readouterr().out
    assert text.endswith("}\n"), text[-20:]  # one newline at the end, as every JSON the command writes
    return json.loads(text)


def test_dla_json_holds_the_attribution_and_sums_to_the_logit_difference(capsys):
    from transformer_core.analysis.logit_attribution import direct_logit_attribution, head_outputs
    from transformer_core.models.smollm2 import load_smollm2
    from transformer_core.models.smollm2_trace import run_smollm2

    out = export_json(capsys, "--view", "dla", "--target", " Mary", "--contrast", " John")
    assert out["view"] == "dla" and out["target"] == "␣Mary" and out["contrast"] == "␣John"
    dla = out["dla"]
    assert set(dla) == {"heads", "mlps", "embed", "total", "logit_diff"}
    heads = np.array(dla["heads"])
    assert heads.shape == (30, 9) and len(dla["mlps"]) == 30
    assert dla["total"] == pytest.approx(heads.sum() + sum(dla["mlps"]) + dla["embed"], abs=1e-9)
    assert dla["total"] == pytest.approx(dla["logit_diff"], abs=1e-3) and dla["logit_diff"] > 2
    model, tokenizer = load_smollm2()
    _trace, prediction = run_smollm2(IOI, residuals=True, only=lambda n: False)
    mary, john = (tokenizer.encode(w, add_special_tokens=False).ids[0] for w in (" Mary", " John"))
    parts = prediction["parts"]
    core = direct_logit_attribution(model, {**parts, "heads": head_outputs(model, parts["contexts"])}, mary, john)
    np.testing.assert_allclose(heads, core["heads"], atol=1e-9)


def test_logit_lens_json_ends_on_the_models_prediction(capsys):
    from transformer_core.models.smollm2_trace import run_smollm2

    out = export_json(capsys, "--view", "logit-lens")  # target: the model's own prediction
    assert out["target"] == "␣Mary"
    prob = np.array(out["logit_lens"]["target_prob"])
    assert prob.shape == (31, 14) and len(out["logit_lens"]["top_tokens"]) == 31
    _trace, prediction = run_smollm2(IOI)
    mary = prediction["top"][-1][0][1]
    np.testing.assert_allclose(prob[-1], prediction["probs"][:, mary], atol=1e-5)
    assert out["logit_lens"]["top_tokens"][-1][-1] == "␣Mary"


@pytest.mark.parametrize("args, words", [
    (["--model", "toy", "--view", "dla"], "--model smollm2"),
    (["--model", "smollm2", "--view", "dla", "--target", " Maryanne-Louise"], "exactly one SmolLM2 token"),
    (["--model", "smollm2", "--view", "patching", "--target", " Mary"], "give --contrast"),
    (["--model", "smollm2", "--view", "patching", "--target", " Mary", "--contrast", " John", "--corrupt", "Mary"],
     "as many tokens as the prompt"),
])
def test_bad_requests_exit_2_with_one_line(capsys, args, words):
    assert main(["--text", IOI, "--format", "json", "--out", "-", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_routes_json_is_the_core_route_and_a_bad_threshold_exits_2(capsys):
    from transformer_core.analysis.routes import contribution_tables, edge_rows, route_graph
    from transformer_core.models.smollm2 import load_smollm2
    from transformer_core.models.smollm2_trace import route_block, run_smollm2

    out = export_json(capsys, "--view", "routes", "--threshold", "0.1")
    routes = out["routes"]
    assert routes["position"] == 13 and routes["threshold"] == 0.1
    model, _tokenizer = load_smollm2()
    _trace, prediction = run_smollm2(IOI, residuals=True, only=lambda n: False)
    stream = prediction["stream"]
    tables = contribution_tables(30, lambda layer: route_block(stream[layer], layer),
                                 lambda layer: model.layers[layer].attention.W_O.weight.detach().numpy(), stream)
    core = edge_rows(route_graph(tables["attn"], tables["attn_residual"], tables["mlp"], tables["mlp_residual"],
                                 13, 0.1))
    assert [(r["kind"], r["layer"], r["from"], r["to"]) for r in routes["edges"]] == \
        [(r["kind"], r["layer"], r["from"], r["to"]) for r in core]
    np.testing.assert_allclose([r["weight"] for r in routes["edges"]], [r["weight"] for r in core], atol=1e-9)
    assert main(["--model", "smollm2", "--text", IOI, "--view", "routes", "--threshold", "1.5", "--format", "json",
                 "--out", "-"]) == 2
    assert "--threshold" in capsys.readouterr().err
