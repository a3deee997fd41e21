"""Direct logit attribution on a checkpoint whose attention output projections have a bias (``LlamaForCausalLM`` with
``attention_bias=True``, tiny and random, written by ``transformers`` and read back by ``transformer_core.models.load``),
against Hugging Face eager with forward hooks.

The reference is built from Hugging Face's own tensors: each head's slice of o_proj's input through its columns of
o_proj's weight, o_proj's bias of every layer, each MLP's output, the embedding and the final norm's input. As in
TransformerLens (``get_full_resid_decomposition``'s ``"bias"`` row), the biases are one term of their own, summed over
the layers, and the parts add up to Hugging Face's logit difference. Able to fail: without the bias term the parts
miss the logit difference by that term (asserted to be large here), and a bias split evenly over the heads gives
other head values.
"""
from __future__ import annotations

import numpy as np
import pytest
import tiny_checkpoints as tc

from hf_parts import hf_parts


def test_the_output_bias_is_its_own_term_and_the_parts_sum_to_hugging_faces_logit_difference(tiny_checkpoints):
    from transformer_core.analysis.logit_attribution import direct_logit_attribution, head_outputs
    from transformer_core.models import load
    from transformer_core.models.smollm2_trace import run_smollm2

    folder, hf = tiny_checkpoints["llama"]
    assert hf.config.attention_bias and hf.model.layers[0].self_attn.o_proj.bias is not None
    face = load(folder)
    trace, prediction = run_smollm2(tc.TEXT, residuals=True, only=lambda n: False, checkpoint=face.checkpoint)
    ids = list(trace.settings["ids"])
    ref = hf_parts(hf, ids)
    target, contrast = (int(i) for i in np.argsort(-ref["logits"])[:2])
    parts = prediction["parts"]
    model = face.module
    dla = direct_logit_attribution(model, {**parts, "heads": head_outputs(model, parts["contexts"])}, target, contrast)

    # the reference written out: frozen 1/rms of the final residual, the norm's weight, W_U[target] − W_U[contrast]
    scale = 1 / np.sqrt(np.mean(ref["final"] ** 2) + hf.config.rms_norm_eps)
    w_u = hf.lm_head.weight.double().numpy()
    direction = (w_u[target] - w_u[contrast]) * hf.model.norm.weight.double().numpy()
    np.testing.assert_allclose(dla["heads"], ref["heads"] @ direction * scale, atol=1e-4, rtol=0)
    np.testing.assert_allclose(dla["mlps"], ref["mlps"] @ direction * scale, atol=1e-4, rtol=0)
    assert dla["embed"] == pytest.approx(ref["embed"] @ direction * scale, abs=1e-4)
    hf_diff = ref["logits"][target] - ref["logits"][contrast]
    assert dla["logit_diff"] == pytest.approx(hf_diff, abs=1e-4)
    assert dla["total"] == pytest.approx(hf_diff, abs=1e-4)  # embed + heads + MLPs + bias: the whole logit
    assert dla["bias"] == pytest.approx(ref["bias"] @ direction * scale, abs=1e-4)
    np.testing.assert_allclose(dla["bias_layers"], [b.self_attn.o_proj.bias.double().numpy() @ direction * scale
                                                    for b in hf.model.layers], atol=1e-4, rtol=0)
    assert dla["bias"] == pytest.approx(dla["bias_layers"].sum(), abs=1e-12)
    # the stream really is that sum (Hugging Face's own tensors), so no part is missing from the reference
    np.testing.assert_allclose(ref["embed"] + ref["heads"].sum((0, 1)) + ref["mlps"].sum(0) + ref["bias"],
                               ref["final"], atol=1e-4, rtol=0)
    # able to fail: the bias matters here, so leaving it out misses the logit difference by far more than rounding
    assert abs(dla["bias"]) > 0.05
    assert abs(dla["heads"].sum() + dla["mlps"].sum() + dla["embed"] - hf_diff) > 0.05
    # and it is not a head's: split evenly over the heads (as some tools do) every head's value would move
    n_heads = hf.config.num_attention_heads
    split = (ref["heads"] + ref["bias"] / (len(hf.model.layers) * n_heads)) @ direction * scale
    assert np.abs(split - dla["heads"]).max() > 1e-3


def test_a_model_without_output_biases_has_no_bias_term(tiny_checkpoints):
    from transformer_core.analysis.logit_attribution import direct_logit_attribution, head_outputs, output_biases
    from transformer_core.models import load
    from transformer_core.models.smollm2_trace import run_smollm2

    folder, hf = tiny_checkpoints["qwen2"]  # biases on q, k and v only, none on o_proj
    assert hf.model.layers[0].self_attn.o_proj.bias is None
    face = load(folder)
    trace, prediction = run_smollm2(tc.TEXT, residuals=True, only=lambda n: False, checkpoint=face.checkpoint)
    parts = prediction["parts"]
    model = face.module
    assert output_biases(model) is None
    dla = direct_logit_attribution(model, {**parts, "heads": head_outputs(model, parts["contexts"])}, 5)
    assert dla["bias"] is None and dla["bias_layers"] is None
    assert dla["total"] == pytest.approx(dla["logit_diff"], abs=1e-4)
    assert dla["logit_diff"] == pytest.approx(float(tc.hf_run(hf, list(trace.settings["ids"]))[0][-1, 5]), abs=1e-4)


def test_the_export_commands_dla_view_carries_the_bias_term(tiny_checkpoints, capsys, tmp_path):
    import json

    import pandas as pd

    from transformer_core.cli.export import main

    folder, _hf = tiny_checkpoints["llama"]
    argv = ["--model", str(folder), "--text", tc.TEXT, "--view", "dla"]
    assert main([*argv, "--format", "json", "--out", "-"]) == 0
    dla = json.loads(capsys.readouterr().out)["dla"]
    assert dla["total"] == pytest.approx(np.sum(dla["heads"]) + sum(dla["mlps"]) + dla["embed"] + dla["bias"], abs=1e-9)
    assert dla["total"] == pytest.approx(dla["logit_diff"], abs=1e-4) and abs(dla["bias"]) > 1e-3
    assert dla["bias"] == pytest.approx(sum(dla["bias_layers"]), abs=1e-9) and len(dla["bias_layers"]) == 2
    out = tmp_path / "dla.csv"
    assert main([*argv, "--format", "csv", "--out", str(out)]) == 0
    frame = pd.read_csv(out, index_col=0)
    assert list(frame.columns)[-2:] == ["MLP", "attention output bias"]
    np.testing.assert_allclose(frame["attention output bias"], dla["bias_layers"], rtol=1e-6, atol=1e-9)


def test_the_routes_decomposition_check_counts_the_output_bias(tiny_checkpoints):
    """The routes leave b_O out of their parts (as the LLM Transparency Tool), but their own check, that the parts,
    the residual and b_O rebuild the stream after attention, holds with it (it was off by |b_O| on this checkpoint)."""
    from transformer_core.analysis.routes import decoder_tables
    from transformer_core.models import load
    from transformer_core.models.smollm2_trace import run_smollm2

    folder, hf = tiny_checkpoints["llama"]
    face = load(folder)
    _trace, prediction = run_smollm2(tc.TEXT, residuals=True, only=lambda n: False, checkpoint=face.checkpoint)
    tables = decoder_tables(face.module, prediction["stream"], face.checkpoint)
    assert tables["gap"] < 1e-4
    assert max(float(b.self_attn.o_proj.bias.abs().max()) for b in hf.model.layers) > 0.1  # the bias is not small
