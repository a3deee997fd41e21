"""A local LLaMA-family checkpoint on our own modules: a Hugging Face folder or a ``llama`` GGUF file.

A Hugging Face folder holds ``config.json``, the weights in ``model.safetensors`` (or shards listed in
``model.safetensors.index.json``) and ``tokenizer.json``; it is read with ``safetensors`` and ``tokenizers``
only, never ``transformers``. The architectures we run, and what each adds to LLaMA (the modelling files of
transformers 5 are the reference for every name and formula):

* ``LlamaForCausalLM`` (Llama 2/3, SmolLM): ``attention_bias`` puts biases on W_Q, W_K, W_V and W_O;
  ``rope_scaling`` ``llama3`` or ``linear``;
* ``Qwen2ForCausalLM`` (Qwen2, Qwen2.5): biases on W_Q, W_K, W_V (none on W_O); a sliding window on the layers
  from ``max_window_layers`` on when ``use_sliding_window``;
* ``Qwen3ForCausalLM``: an RMSNorm over each query and key head before RoPE (``q_norm``, ``k_norm``), heads of
  ``head_dim`` (not ``hidden_size / num_attention_heads``);
* ``MistralForCausalLM``: every layer's query sees the ``sliding_window`` most recent positions.

Tied (``tie_word_embeddings``) or separate (``lm_head.weight``) unembeddings both load. A chat template
(``tokenizer_config.json``) is never applied: the text runs as typed, and :func:`describe` says so. A
``llama`` GGUF file goes through :func:`~transformer_core.models.gguf_weights.read_gguf` without its SHA-256 check.

Weights become float32 (bfloat16 files included); the model is in eval mode without gradients.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from ..nn.gqa import LlamaConfig
from .smollm2 import SmolLM2

ARCHITECTURES = ("LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "MistralForCausalLM")
SUPPORTED = ("a Hugging Face folder (config.json, *.safetensors, tokenizer.json) of " + ", ".join(ARCHITECTURES)
             + ", or a llama-architecture .gguf file")


class CheckpointError(ValueError):
    """A local checkpoint that cannot be run here: missing file, unsupported architecture or option. The message
    names the file or the option, and what is supported."""


class CheckpointTooLarge(CheckpointError):
    """A checkpoint whose float32 weights (``need`` bytes) do not fit in the memory allowed for it (``allowed``
    bytes): refused before anything is read, so a server does not die of it."""

    def __init__(self, path, need: int, allowed: int) -> None:
        super().__init__(f"{Path(path).name} needs about {need / 2**30:.1f} GiB as float32 weights; "
                         f"{max(allowed, 0) / 2**30:.1f} GiB is free for it here")
        self.need, self.allowed = need, allowed


@dataclass
class Checkpoint:
    """A loaded checkpoint: ``model`` (:class:`~transformer_core.models.smollm2.SmolLM2`, the LLaMA decoder),
    ``tokenizer`` (``tokenizers.Tokenizer``), ``architecture`` (e.g. ``"Qwen2ForCausalLM"`` or ``"gguf:llama"``),
    ``path``, ``add_special_tokens`` (whether :meth:`encode` lets the tokenizer add its BOS, as the checkpoint's
    own tokenizer does), ``chat_template`` (whether the folder has one; never applied)."""

    model: SmolLM2
    tokenizer: object
    architecture: str
    path: Path
    add_special_tokens: bool = True
    chat_template: bool = False

    @property
    def name(self) -> str:
        """``"Qwen2.5-0.5B (Qwen2ForCausalLM)"``: the folder's or file's name and the architecture."""
        return f"{self.path.name} ({self.architecture})"


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path.parent} has no {path.name}: expected {SUPPORTED}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"{path} cannot be read as JSON: {err}") from None


def _rope(cfg: dict) -> tuple[float, dict]:
    """``(rope_base, scaling)`` from a config: transformers 5 writes ``rope_parameters``, older files
    ``rope_theta`` and ``rope_scaling``."""
    params = dict(cfg.get("rope_parameters") or {})
    base = float(params.pop("rope_theta", cfg.get("rope_theta", 10000.0)))
    params.update(cfg.get("rope_scaling") or {})
    if "type" in params and "rope_type" not in params:
        params["rope_type"] = params.pop("type")
    if float(params.pop("partial_rotary_factor", 1.0)) != 1.0:
        raise CheckpointError("partial_rotary_factor below 1 (RoPE on part of each head) is not supported")
    if params.get("rope_type", "default") == "default":
        return base, {}
    return base, params


def _windows(cfg: dict, arch: str, n_layers: int) -> tuple[int, ...] | None:
    window = cfg.get("sliding_window")
    types = cfg.get("layer_types")
    if arch == "MistralForCausalLM":
        return (int(window),) * n_layers if window else None
    if arch in ("Qwen2ForCausalLM", "Qwen3ForCausalLM") and cfg.get("use_sliding_window") and window:
        if types is None:
            first = int(cfg.get("max_window_layers", n_layers))
            types = ["sliding_attention" if i >= first else "full_attention" for i in range(n_layers)]
        return tuple(int(window) if t == "sliding_attention" else 0 for t in types)
    return None


def config_from_hf(cfg: dict) -> tuple[str, LlamaConfig]:
    """``(architecture, LlamaConfig)`` of a Hugging Face ``config.json`` dict.

    Raises:
        CheckpointError: an architecture other than :data:`ARCHITECTURES`, an activation other than SiLU, MLP
            biases, an unsupported RoPE scaling (named), or sizes that do not fit.
    """
    archs = cfg.get("architectures") or [cfg.get("model_type")]
    arch = archs[0] if archs else None
    if arch not in ARCHITECTURES:
        raise CheckpointError(f"architecture {arch!r} is not supported: supported are {', '.join(ARCHITECTURES)}")
    if cfg.get("hidden_act", "silu") != "silu":
        raise CheckpointError(f"hidden_act {cfg['hidden_act']!r} is not supported (only silu, SwiGLU)")
    if cfg.get("mlp_bias"):
        raise CheckpointError("mlp_bias (biases in the feed-forward) is not supported")
    base, scaling = _rope(cfg)
    bias = bool(cfg.get("attention_bias", False))
    n_layers = int(cfg["num_hidden_layers"])
    n_heads = int(cfg["num_attention_heads"])
    try:
        config = LlamaConfig(
            vocab_size=cfg["vocab_size"], d_model=cfg["hidden_size"], n_layers=n_layers, n_heads=n_heads,
            n_kv_heads=cfg.get("num_key_value_heads") or n_heads, d_ff=cfg["intermediate_size"], rope_base=base,
            norm_eps=float(cfg.get("rms_norm_eps", 1e-6)), max_positions=cfg.get("max_position_embeddings", 2048),
            head_dim=cfg.get("head_dim"), qkv_bias=bias or arch == "Qwen2ForCausalLM",
            o_bias=bias and arch != "Qwen2ForCausalLM", qk_norm=arch == "Qwen3ForCausalLM",
            windows=_windows(cfg, arch, n_layers), tied=bool(cfg.get("tie_word_embeddings", False)),
            rope_scaling=tuple(scaling.items()))
    except KeyError as err:
        raise CheckpointError(f"config.json lacks {err.args[0]!r}") from None
    except ValueError as err:
        raise CheckpointError(f"config.json: {err}") from None
    return arch, config


_LAYER_NAMES = {
    "input_layernorm": "attention_norm", "post_attention_layernorm": "ffn_norm",
    "self_attn.q_proj": "attention.W_Q", "self_attn.k_proj": "attention.W_K", "self_attn.v_proj": "attention.W_V",
    "self_attn.o_proj": "attention.W_O", "self_attn.q_norm": "attention.q_norm", "self_attn.k_norm": "attention.k_norm",
    "mlp.gate_proj": "feed_forward.W_gate", "mlp.up_proj": "feed_forward.W_up", "mlp.down_proj": "feed_forward.W_down",
}
_TOP_NAMES = {"model.embed_tokens.weight": "embed.weight", "model.norm.weight": "final_norm.weight",
              "lm_head.weight": "unembed.weight"}


def our_name(hf_name: str) -> str | None:
    """``model.layers.3.self_attn.q_proj.bias`` → ``layers.3.attention.W_Q.bias``; ``None`` for a tensor we do
    not use (rotary tables some files keep)."""
    if hf_name in _TOP_NAMES:
        return _TOP_NAMES[hf_name]
    parts = hf_name.split(".")
    if len(parts) >= 5 and parts[:2] == ["model", "layers"] and parts[2].isdigit():
        module, leaf = ".".join(parts[3:-1]), parts[-1]
        if module in _LAYER_NAMES:
            return f"layers.{parts[2]}.{_LAYER_NAMES[module]}.{leaf}"
    return None


def _weight_files(folder: Path) -> list[Path]:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        shards = sorted(set(_read_json(index).get("weight_map", {}).values()))
        missing = [s for s in shards if not (folder / s).is_file()]
        if not shards or missing:
            raise CheckpointError(f"{index} lists shards that are missing: {', '.join(missing) or 'none listed'}")
        return [folder / s for s in shards]
    single = folder / "model.safetensors"
    if single.is_file():
        return [single]
    raise CheckpointError(f"{folder} has no model.safetensors (nor model.safetensors.index.json): expected {SUPPORTED}")


def read_state(folder: Path, config: LlamaConfig) -> dict[str, torch.Tensor]:
    """Every tensor of the folder's safetensors files in our names, float32.

    Raises:
        CheckpointError: a file cannot be read, a tensor the model needs is missing (named), or an
            unexpected one is present.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    state: dict[str, torch.Tensor] = {}
    for path in _weight_files(folder):
        try:
            tensors = load_file(path)
        except (SafetensorError, OSError) as err:
            raise CheckpointError(f"{path} cannot be read as safetensors: {err}") from None
        for name, tensor in tensors.items():
            ours = our_name(name)
            if ours is None and "rotary_emb" in name:
                continue
            if ours is None:
                raise CheckpointError(f"unexpected tensor {name!r} in {path.name}")
            state[ours] = tensor.to(torch.float32)
    if config.tied:
        state.pop("unembed.weight", None)  # some tied checkpoints also store the copy
    return state


def load_model(state: dict[str, torch.Tensor], config: LlamaConfig) -> SmolLM2:
    """A :class:`SmolLM2` decoder of ``config`` holding ``state`` (strict: every name and shape must fit).

    Raises:
        CheckpointError: a missing, unexpected or wrongly shaped tensor (the first few are named).
    """
    model = SmolLM2(config)
    expected = set(model.state_dict())
    missing, extra = sorted(expected - set(state)), sorted(set(state) - expected)
    if missing or extra:
        what = [f"missing {', '.join(missing[:3])}"] if missing else []
        what += [f"unexpected {', '.join(extra[:3])}"] if extra else []
        raise CheckpointError("the weights do not fit the config: " + "; ".join(what))
    try:
        model.load_state_dict(state, strict=True, assign=True)
    except RuntimeError as err:
        raise CheckpointError(f"the weights do not fit the config: {str(err).splitlines()[-1].strip()}") from None
    return model.eval().requires_grad_(False)


def _tokenizer(folder: Path):
    from tokenizers import Tokenizer

    path = folder / "tokenizer.json"
    if not path.is_file():
        raise CheckpointError(f"{folder} has no tokenizer.json: expected {SUPPORTED}")
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as err:  # noqa: BLE001 tokenizers raises a bare Exception for a bad file
        raise CheckpointError(f"{path} cannot be read by the tokenizers library: {err}") from None
    tokenizer.encode_special_tokens = True  # typed "<|im_end|>" stays text, as for SmolLM2
    return tokenizer


def load_folder(folder) -> Checkpoint:
    """Read a Hugging Face folder (see the module docstring).

    Raises:
        CheckpointError: a missing file or an unsupported architecture or option (the message names it).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"{folder} is not a folder: expected {SUPPORTED}")
    arch, config = config_from_hf(_read_json(folder / "config.json"))
    tokenizer = _tokenizer(folder)
    model = load_model(read_state(folder, config), config)
    extra = folder / "tokenizer_config.json"
    chat = extra.is_file() and bool(_read_json(extra).get("chat_template")) or (folder / "chat_template.jinja").is_file()
    ids = {token: tokenizer.token_to_id(token) for token in ("</s>", "<|endoftext|>", "<|end_of_text|>")}
    model.eos_id = next((i for i in ids.values() if i is not None), None)
    model.bos_id = None
    return Checkpoint(model, tokenizer, arch, folder, add_special_tokens=True, chat_template=chat)


def load_gguf(path) -> Checkpoint:
    """Read a ``llama``-architecture GGUF file (any quantisation ``gguf`` dequantises) with a ``gpt2``
    byte-level BPE tokenizer.

    Raises:
        CheckpointError: the file is missing, not GGUF, another architecture, or its tokenizer is not one we build.
    """
    from ..text.byte_bpe import build_byte_bpe
    from ..text.minilm_files import PretrainedUnavailable
    from .gguf_weights import read_gguf

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path} does not exist: expected {SUPPORTED}")
    try:
        config, state, fields = read_gguf(path, expected_sha256=None)
    except PretrainedUnavailable as err:
        raise CheckpointError(f"{path.name}: {err} (supported: {SUPPORTED})") from None
    model = load_model(state, config)
    if fields["model"] != "gpt2":
        raise CheckpointError(f"{path.name}: tokenizer model {fields['model']!r} is not supported (only gpt2, "
                              "byte-level BPE)")
    try:
        tokenizer = build_byte_bpe(fields["tokens"], fields["merges"], fields["pre"], fields["token_type"])
    except ValueError as err:
        raise CheckpointError(f"{path.name}: {err}") from None
    model.eos_id, model.bos_id = fields["eos_id"], fields["bos_id"]
    return Checkpoint(model, tokenizer, "gguf:llama", path, add_special_tokens=False)


def float32_bytes(path) -> int:
    """Bytes the checkpoint at ``path`` takes in memory once loaded (every weight as float32), read from its
    ``config.json`` or its GGUF tensor table only: no weight is read. A file's own size says less (bfloat16 halves
    it, a quantised GGUF holds 4–8 bits a weight).

    Raises:
        CheckpointError: as :func:`load_checkpoint` for a path that holds nothing we read.
    """
    import math

    path = Path(path).expanduser()
    if path.is_dir():
        _arch, config = config_from_hf(_read_json(path / "config.json"))
        with torch.device("meta"):  # the shapes only, no memory
            model = SmolLM2(config)
        return 4 * sum(p.numel() for p in model.parameters())
    if path.suffix.lower() == ".gguf" and path.is_file():
        import gguf

        from .gguf_header import read_header

        try:
            _fields, tensors = read_header(path, gguf.constants.GGML_QUANT_SIZES)
        except (OSError, ValueError) as err:
            raise CheckpointError(f"{path.name} cannot be read as GGUF: {err} (supported: {SUPPORTED})") from None
        return 4 * sum(math.prod(t.dims) for t in tensors)
    raise CheckpointError(f"{path} is neither a folder nor a .gguf file: expected {SUPPORTED}")


def load_checkpoint(path) -> Checkpoint:
    """A folder (:func:`load_folder`) or a ``.gguf`` file (:func:`load_gguf`).

    Raises:
        CheckpointError: nothing there, or what is there is not supported (the message says what is).
    """
    path = Path(path).expanduser()
    if path.is_dir():
        return load_folder(path)
    if path.suffix.lower() == ".gguf":
        return load_gguf(path)
    raise CheckpointError(f"{path} is neither a folder nor a .gguf file: expected {SUPPORTED}")
