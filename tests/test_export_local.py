"""``attention-export --model PATH``: a local checkpoint exports as SmolLM2 does, and ``--verify`` prints how far
our numbers are from Hugging Face eager's (and fails, exit 1, when a loader gets something wrong)."""
from __future__ import annotations

import json
import shutil
import sys

import numpy as np
import pytest
import tiny_checkpoints as tc

from transformer_core.cli.export import main


def test_a_folders_attention_weights_export_as_hugging_face_computes_them(tiny_checkpoints, capsys):
    folder, hf = tiny_checkpoints["qwen2"]
    code = main(["--model", str(folder), "--text", tc.TEXT, "--layer", "1", "--format", "json", "--out", "-"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    ids = data["settings"]["ids"]
    _, reference = tc.hf_run(hf, ids)
    ours = np.array(data["stages"]["layers.1.attention.weights"]["data"], np.float64)[0]  # [head, query, key]
    assert ours.shape == tuple(reference[1].shape) == (4, len(ids), len(ids))
    assert np.abs(ours - reference[1].numpy()).max() <= 1e-4
    assert data["settings"]["model"] == "local" and data["settings"]["n_kv_heads"] == 2


def test_verify_prints_the_largest_differences(tiny_checkpoints, capsys):
    folder, _hf = tiny_checkpoints["mistral"]
    assert main(["--model", str(folder), "--text", tc.TEXT, "--verify"]) == 0
    out = capsys.readouterr().out
    assert "layer 1 attention weights: largest difference" in out and "agree within 0.0001" in out
    assert "same token ids as Hugging Face's tokenizer: yes" in out


def test_verify_fails_when_our_loader_forgets_the_sliding_window(tiny_checkpoints, tmp_path, monkeypatch, capsys):
    from transformer_core.models import checkpoint

    folder = tmp_path / "mistral"
    shutil.copytree(tiny_checkpoints["mistral"][0], folder)
    monkeypatch.setattr(checkpoint, "_windows", lambda cfg, arch, n_layers: None)
    assert main(["--model", str(folder), "--text", tc.TEXT, "--verify"]) == 1
    captured = capsys.readouterr()
    assert "DIFFER beyond 0.0001" in captured.out and "differ from Hugging Face" in captured.err


def test_verify_without_transformers_says_so(tiny_checkpoints, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "transformers", None)
    assert main(["--model", str(tiny_checkpoints["qwen3"][0]), "--verify"]) == 1
    assert "not installed" in capsys.readouterr().err


@pytest.mark.parametrize("argv, words", [
    (["--model", "/nonexistent/model"], ["does not exist", "LlamaForCausalLM", ".gguf"]),
    (["--model", "gpt"], ["invalid choice", "smollm2", "path"]),
])
def test_a_bad_model_is_one_line_naming_what_is_supported(argv, words, capsys):
    assert main([*argv, "--text", "a b"]) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words) and len(err.strip().splitlines()) == 1, err


def test_ablating_a_head_of_a_local_checkpoint_zeroes_its_context_and_is_said(tiny_checkpoints, capsys):
    folder, hf = tiny_checkpoints["qwen3"]
    argv = ["--model", str(folder), "--text", tc.TEXT, "--layer", "1", "--format", "json", "--out", "-"]
    assert main([*argv, "--ablate", "L0H1,L1H2"]) == 0
    data = json.loads(capsys.readouterr().out)
    context = np.array(data["stages"]["layers.1.attention.context"]["data"])[0]  # [head, pos, d_head]
    assert np.all(context[2] == 0) and np.abs(context[1]).max() > 0
    assert data["settings"]["ablate"] == "L0H1,L1H2" and data["settings"]["ablate_mode"] == "zero"
    # layer 1's weights follow Hugging Face's model with head 1 of layer 0 knocked out (o_proj's input slice zeroed)
    _, reference = tc.hf_run_without_head(hf, data["settings"]["ids"], 0, 1)
    ours = np.array(data["stages"]["layers.1.attention.weights"]["data"])[0]
    assert np.abs(ours - reference[1].numpy()).max() <= 1e-4
    assert main([*argv, "--ablate", "L0H1", "--ablate-mode", "mean_sentence"]) == 2
    assert "zero or mean" in capsys.readouterr().err  # later tokens would leak into earlier positions


def test_mean_ablation_of_a_local_checkpoint_puts_hugging_faces_reference_mean_in(tiny_checkpoints, capsys):
    """``--ablate-mode mean`` on a decoder: the head's context is its mean over the IOI reference prompts run on the
    same model (pooled over positions); layer 1's weights equal Hugging Face's with o_proj's input slice of L0H1
    replaced by that mean (hooks on Hugging Face's own model), and differ from zero ablation's."""
    from test_decoder_mean_ablation import _hf_means
    from tokenizers import Tokenizer

    from transformer_core.analysis.ablation.next_token import REFERENCE_SETS

    folder, hf = tiny_checkpoints["qwen3"]
    argv = ["--model", str(folder), "--text", tc.TEXT, "--layer", "1", "--format", "json", "--out", "-",
            "--ablate", "L0H1"]
    assert main([*argv, "--ablate-mode", "mean"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["settings"]["ablate_mode"] == "mean"
    d_head = getattr(hf.config, "head_dim", None) or hf.config.hidden_size // hf.config.num_attention_heads
    means = _hf_means(hf, Tokenizer.from_file(str(folder / "tokenizer.json")), REFERENCE_SETS["ioi"], d_head)

    def put_mean(_module, args):
        x = args[0].clone()
        x[..., d_head:2 * d_head] = means[0][1].to(x.dtype)
        return (x,)

    hook = hf.model.layers[0].self_attn.o_proj.register_forward_pre_hook(put_mean)
    try:
        _, reference = tc.hf_run(hf, data["settings"]["ids"])
    finally:
        hook.remove()
    ours = np.array(data["stages"]["layers.1.attention.weights"]["data"])[0]
    assert np.abs(ours - reference[1].numpy()).max() <= 1e-4
    _, zeroed = tc.hf_run_without_head(hf, data["settings"]["ids"], 0, 1)
    assert np.abs(ours - zeroed[1].numpy()).max() > 1e-3  # the mean is not zero ablation under another name
