"""Tiny random checkpoints of each LLaMA-family architecture, written by ``transformers`` the way a user's download
looks (``config.json``, safetensors, ``tokenizer.json``): the independent references of the local-checkpoint tests.

Every parameter is drawn at random (biases and norm weights included: ``transformers`` starts biases at 0 and
norms at 1, which would hide a loader that drops them). Sizes: 2 layers, d_model 64, 4 query / 2 key-value heads,
a byte-level BPE of ~300 tokens trained here on a few sentences.
"""
from __future__ import annotations

import json
from pathlib import Path

SENTENCES = ["When Mary and John went to the store, John gave a drink to Mary.",
             "The cat sat on the mat. The dog sat on the log.", "我喜欢学习注意力。 1234 + 5678 = 6912"]
TEXT = "When Mary and John went to the store, John gave a drink to"

# architecture → (config class name, extra config fields)
ARCHS = {
    "llama": ("LlamaConfig", {"attention_bias": True, "tie_word_embeddings": False, "rope_parameters": {
        "rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 32}}),
    "qwen2": ("Qwen2Config", {"tie_word_embeddings": True}),
    "qwen3": ("Qwen3Config", {"head_dim": 32, "tie_word_embeddings": True}),
    "mistral": ("MistralConfig", {"sliding_window": 4, "tie_word_embeddings": False}),
}


def byte_bpe(bos: bool):
    """A byte-level BPE trained on :data:`SENTENCES` (``<|endoftext|>`` id 0; with ``bos`` a ``<s>`` id 1 the
    post-processor puts first, as Llama's tokenizer.json does)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>", "<s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(SENTENCES * 4, trainer)
    if bos:
        tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return tokenizer


def randomise(model, seed: int) -> None:
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator)
            p.copy_(1 + 0.2 * noise if "norm" in name else 0.15 * noise)


def make(arch: str, folder: Path, *, seed: int = 0, shard: bool = False):
    """Write a tiny ``arch`` checkpoint into ``folder``; returns the Hugging Face model (eager attention, float32)."""
    import transformers

    cls, extra = ARCHS[arch]
    tokenizer = byte_bpe(bos=arch == "llama")
    config = getattr(transformers, cls)(vocab_size=tokenizer.get_vocab_size(), hidden_size=64, intermediate_size=96,
                                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                        max_position_embeddings=128, **extra)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    randomise(model, seed)
    model.eval().requires_grad_(False)
    model.save_pretrained(folder, max_shard_size="40KB" if shard else "5GB")
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}))
    return model


def hf_run(model, ids: list[int]):
    """Hugging Face's logits ``[pos, vocab]`` and every layer's attention weights ``[head, query, key]``."""
    import torch

    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True, use_cache=False)
    return out.logits[0], [a[0] for a in out.attentions]


def hf_run_without_head(model, ids: list[int], layer: int, head: int):
    """:func:`hf_run` with one head knocked out: its ``head_dim``-wide slice of ``o_proj``'s input zeroed by a forward
    pre-hook (transformers 5 ignores ``head_mask``)."""
    width = getattr(model.config, "head_dim", None) or model.config.hidden_size // model.config.num_attention_heads

    def zero_head(module, args):
        x = args[0].clone()
        x[..., head * width:(head + 1) * width] = 0.0
        return (x,)

    hook = model.model.layers[layer].self_attn.o_proj.register_forward_pre_hook(zero_head)
    try:
        return hf_run(model, ids)
    finally:
        hook.remove()
