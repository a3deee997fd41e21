"""Local LLaMA-family checkpoints on our modules against Hugging Face eager (``transformers``, test-only).

Tiny random checkpoints of ``LlamaForCausalLM`` (attention biases, untied unembedding, llama3 RoPE scaling),
``Qwen2ForCausalLM`` (q/k/v biases, tied), ``Qwen3ForCausalLM`` (q/k RMSNorm, 32-wide heads in a 64-wide model)
and ``MistralForCausalLM`` (a 4-position sliding window, sharded safetensors) are written by ``transformers`` and
read back by :mod:`transformer_core.models.checkpoint` with safetensors and tokenizers only. Logits and every layer's
attention weights agree to 1e-4; the same Llama weights written as a GGUF file agree too. Each variant is shown to
matter: our model without the biases, the q/k norm, the window or the RoPE scaling misses Hugging Face's numbers.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import tiny_checkpoints as tc
import torch

from transformer_core.models.checkpoint import CheckpointError, load_checkpoint, load_model
from transformer_core.nn.hooks import capture


@pytest.fixture
def tiny(tiny_checkpoints):
    return tiny_checkpoints


def ours(model, ids):
    with torch.no_grad(), capture(model, only=lambda n: n.endswith("attention.weights")) as stages:
        logits = model(torch.tensor([ids]))[0]
    return logits, [stages[f"layers.{i}.attention.weights"][0] for i in range(len(model.layers))]


def largest_differences(model, hf, ids) -> tuple[float, float]:
    logits, weights = ours(model, ids)
    hf_logits, hf_weights = tc.hf_run(hf, ids)
    assert logits.shape == hf_logits.shape and len(weights) == len(hf_weights) == 2
    return ((logits - hf_logits).abs().max().item(),
            max((w - r).abs().max().item() for w, r in zip(weights, hf_weights)))


@pytest.mark.parametrize("arch", list(tc.ARCHS))
def test_logits_and_every_layers_attention_weights_match_hugging_face(tiny, arch):
    folder, hf = tiny[arch]
    checkpoint = load_checkpoint(folder)
    ids = checkpoint.tokenizer.encode(tc.TEXT, add_special_tokens=True).ids
    assert len(ids) > 8  # longer than Mistral's window of 4
    logit_diff, weight_diff = largest_differences(checkpoint.model, hf, ids)
    assert logit_diff <= 1e-4 and weight_diff <= 1e-4
    assert checkpoint.architecture == hf.config.architectures[0]
    assert checkpoint.chat_template  # found, and never applied


# what each architecture adds, taken away from our copy: the numbers leave Hugging Face's
WITHOUT = {
    "llama": (lambda c: dataclasses.replace(c, rope_scaling=()), lambda name: False),
    "qwen2": (lambda c: dataclasses.replace(c, qkv_bias=False), lambda name: name.endswith("bias")),
    "qwen3": (lambda c: dataclasses.replace(c, qk_norm=False), lambda name: "q_norm" in name or "k_norm" in name),
    "mistral": (lambda c: dataclasses.replace(c, windows=None), lambda name: False),
}


@pytest.mark.parametrize("arch", list(tc.ARCHS))
def test_each_variant_matters(tiny, arch):
    folder, hf = tiny[arch]
    checkpoint = load_checkpoint(folder)
    change_config, drop = WITHOUT[arch]
    state = {k: v for k, v in checkpoint.model.state_dict().items() if not drop(k)}
    if arch == "llama":  # keep the other bias (W_O's) so only the scaling is missing
        assert any(k.endswith("W_O.bias") for k in state)
    plain = load_model(state, change_config(checkpoint.model.config))
    ids = checkpoint.tokenizer.encode(tc.TEXT, add_special_tokens=True).ids
    _logit_diff, weight_diff = largest_differences(plain, hf, ids)
    assert weight_diff > 1e-2, arch


def test_llamas_tokenizer_puts_its_bos_first_and_typed_control_text_stays_text(tiny):
    checkpoint = load_checkpoint(tiny["llama"][0])
    ids = checkpoint.tokenizer.encode("<s>Mary", add_special_tokens=True).ids
    assert ids[0] == 1 and 1 not in ids[1:]


def write_gguf(path, state: dict, config, tokenizer_json: dict) -> None:
    """The tiny Llama as llama.cpp would write it: F32 tensors, W_Q/W_K rows interleaved, a gpt2 tokenizer."""
    import gguf

    from transformer_core.models.gguf_weights import permute_rows

    names = {"embed.weight": "token_embd.weight", "final_norm.weight": "output_norm.weight",
             "unembed.weight": "output.weight"}
    layer = {"attention_norm": "attn_norm", "attention.W_Q": "attn_q", "attention.W_K": "attn_k",
             "attention.W_V": "attn_v", "attention.W_O": "attn_output", "ffn_norm": "ffn_norm",
             "feed_forward.W_gate": "ffn_gate", "feed_forward.W_up": "ffn_up", "feed_forward.W_down": "ffn_down"}
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(config.max_positions)
    writer.add_embedding_length(config.d_model)
    writer.add_block_count(config.n_layers)
    writer.add_feed_forward_length(config.d_ff)
    writer.add_head_count(config.n_heads)
    writer.add_head_count_kv(config.n_kv_heads)
    writer.add_rope_freq_base(config.rope_base)
    writer.add_layer_norm_rms_eps(config.norm_eps)
    vocab = sorted(tokenizer_json["model"]["vocab"].items(), key=lambda kv: kv[1])
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt2")
    writer.add_token_list([t for t, _ in vocab])
    writer.add_token_types([3 if t.startswith("<") and t.endswith(">") else 1 for t, _ in vocab])
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in tokenizer_json["model"]["merges"]])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(0)
    for name, tensor in state.items():
        array = tensor.numpy()
        if name.startswith("layers."):
            _, i, rest = name.split(".", 2)
            module, leaf = rest.rsplit(".", 1)
            if name.endswith(("W_Q.weight", "W_K.weight")):
                array = permute_rows(array, config.n_heads if "W_Q" in name else config.n_kv_heads)
            gguf_name = f"blk.{i}.{layer[module]}.{leaf}"
        else:
            gguf_name = names[name]
        writer.add_tensor(gguf_name, np.ascontiguousarray(array, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_a_llama_gguf_file_gives_the_folders_numbers(tiny, tmp_path):
    import json

    folder, _hf = tiny["llama"]
    checkpoint = load_checkpoint(folder)
    config = dataclasses.replace(checkpoint.model.config, rope_scaling=(), o_bias=False, qkv_bias=False)
    state = {k: v for k, v in checkpoint.model.state_dict().items() if not k.endswith("bias")}
    plain = load_model(state, config)
    path = tmp_path / "tiny.gguf"
    write_gguf(path, state, config, json.loads((folder / "tokenizer.json").read_text()))
    from_file = load_checkpoint(path)
    assert from_file.architecture == "gguf:llama" and not from_file.model.config.tied
    ids = checkpoint.tokenizer.encode(tc.TEXT, add_special_tokens=False).ids
    assert from_file.tokenizer.encode(tc.TEXT).ids == ids  # the same BPE, rebuilt from the file's fields
    (logits, weights), (ref_logits, ref_weights) = ours(from_file.model, ids), ours(plain, ids)
    assert (logits - ref_logits).abs().max().item() <= 1e-5
    assert all((w - r).abs().max().item() <= 1e-6 for w, r in zip(weights, ref_weights))


@pytest.mark.parametrize("change, words", [
    (lambda c: {**c, "architectures": ["GPT2LMHeadModel"]}, ["GPT2LMHeadModel", "LlamaForCausalLM", "Qwen3ForCausalLM"]),
    (lambda c: {**c, "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0}}, ["yarn", "llama3"]),
    (lambda c: {**c, "hidden_act": "gelu"}, ["gelu", "silu"]),
])
def test_unsupported_configs_are_refused_by_name(tiny, tmp_path, change, words):
    import json
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(tiny["qwen2"][0], folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(change(config)))
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    assert all(w in str(err.value) for w in words), str(err.value)


@pytest.mark.parametrize("missing", ["tokenizer.json", "model.safetensors", "config.json"])
def test_a_missing_file_is_named(tiny, tmp_path, missing):
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(tiny["qwen2"][0], folder)
    (folder / missing).unlink()
    with pytest.raises(CheckpointError, match=missing.replace(".", r"\.")):
        load_checkpoint(folder)
    with pytest.raises(CheckpointError, match="neither a folder nor a .gguf"):
        load_checkpoint(tmp_path / "nothing.bin")
