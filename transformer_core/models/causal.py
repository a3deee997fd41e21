"""A tiny decoder-only Transformer trained here, on repeated random tokens, where induction heads form.

The model (:class:`CausalLM`): token embedding + learned position embedding → 2 attention-only
layers, each our own :class:`~transformer_core.nn.attention.MultiHeadAttention` (4 heads, d_model 64,
post-LN residual ``norm(x + W_O(concat))``) under the causal mask → a linear unembedding to logits.

Why this shape: Elhage et al., "A Mathematical Framework for Transformer Circuits" (2021), show
that induction heads need two layers of attention and nothing else — a *previous-token head* in
layer 0 writes "the token before me was A" into each position, and an *induction head* in layer 1
uses it (K-composition) to attend from the current token A to the token after A's previous
occurrence and copy it. Leaving the feed-forward out keeps every computation an attention pattern
the learner can see. *Learned* positions (not sinusoidal) because the previous-token head must
attend by position only; a learned table lets it find "one step back" quickly, as in Olsson et al.,
"In-context Learning and Induction Heads" (2022), whose small attention-only models use them too.

Mask convention: ``True`` = may attend; the model applies
:func:`~transformer_core.nn.masks.causal_mask` unless told ``causal=False`` (only to show what breaks).
Shape legend: batch, head, query_pos, key_pos, d_head; pos, vocab, d_model.

All random draws (weights and training data) come from local ``torch.Generator`` objects,
never from the process-global RNG (as :func:`transformer_core.nn.encoder.build_seeded`).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import torch
from torch import nn

from ..records.checksums import require_sha256, sha256_of  # noqa: F401  (sha256_of: re-exported)
from ..nn.attention import MultiHeadAttention
from ..nn.encoder import init_parameters
from ..nn.masks import causal_mask
from ..text.i18n import _

DATA_DIR = Path(__file__).resolve().parent / "data"
WEIGHTS_PATH = DATA_DIR / "causal_model.safetensors"  # final weights and every checkpoint
TRAINING_LOG_PATH = DATA_DIR / "causal_training.json"  # config, loss curve, checkpoint steps
_TOKEN_ID = re.compile(r"[0-9]{1,9}")  # ASCII digits, as typed; more digits than an id ever needs are refused
# SHA-256 of WEIGHTS_PATH as committed; written by `python -m transformer_core.models.train_causal --write`.
WEIGHTS_SHA256 = "1315aad435792b771780f25d63308e230c3f1b5b2d56a14e047864b443c242e6"


@dataclass(frozen=True)
class CausalConfig:
    """Sizes of :class:`CausalLM` and of its training task (see :mod:`transformer_core.models.train_causal`)."""

    vocab_size: int = 64
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    max_positions: int = 48
    seed: int = 0


CAUSAL_CONFIG = CausalConfig()


class CausalUnavailable(RuntimeError):
    """The committed weights of the causal model are missing, corrupt or do not fit the model."""


class CausalLayer(nn.Module):
    """One attention-only layer: ``x → norm(x + W_O(attention(x)))``; stage names ``attention.*``."""

    def __init__(self, config: CausalConfig) -> None:
        super().__init__()
        self.attention = MultiHeadAttention(config.d_model, config.n_heads)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """``x [batch, pos, d_model]``; mask bool broadcastable to ``[batch, head, query_pos, key_pos]``."""
        out, _weights = self.attention(x, x, x, mask)
        return out


class CausalLM(nn.Module):
    """Decoder-only, attention-only language model on our own modules.

    ``model(input_ids)`` with ``input_ids`` long ``[batch, pos]`` (ids in ``0…vocab_size−1``,
    ``pos ≤ max_positions``) returns logits ``[batch, pos, vocab]``: row ``t`` predicts token ``t+1``.
    Under :func:`~transformer_core.nn.hooks.capture` each layer's stages appear as
    ``layers.{i}.attention.{q,k,v,scores,masked_scores,weights,context,concat,projected,output}``.

    Weights are drawn from ``torch.Generator().manual_seed(config.seed)`` (embeddings ``N(0, 1)``,
    linear layers as PyTorch's default init), never the global RNG.
    """

    def __init__(self, config: CausalConfig = CAUSAL_CONFIG) -> None:
        super().__init__()
        self.config = config
        generator = torch.Generator().manual_seed(config.seed)
        with torch.device("meta"):  # no global-RNG draw while building
            # given a weight, an embedding skips its own N(0, 1) draw: on the meta device that draw goes through
            # torch._refs and imports torch._dynamo (~1.5 s of CPU, the causal page's first open paid it once per
            # process); every weight is replaced and drawn below anyway
            self.token_embedding = nn.Embedding(config.vocab_size, config.d_model,
                                                _weight=torch.empty(config.vocab_size, config.d_model))
            self.position_embedding = nn.Embedding(config.max_positions, config.d_model,
                                                   _weight=torch.empty(config.max_positions, config.d_model))
            self.layers = nn.ModuleList(CausalLayer(config) for _layer in range(config.n_layers))
            self.unembed = nn.Linear(config.d_model, config.vocab_size)
        for m in self.modules():
            for name, p in list(m.named_parameters(recurse=False)):
                setattr(m, name, nn.Parameter(torch.empty(p.shape, dtype=p.dtype)))
        with torch.no_grad():
            for emb in (self.token_embedding, self.position_embedding):
                emb.weight.normal_(0.0, 1.0, generator=generator)
        init_parameters(self.layers, generator)
        init_parameters(self.unembed, generator)

    @property
    def vocab_size(self) -> int:
        return self.config.vocab_size

    def forward(self, input_ids: torch.Tensor, *, causal: bool = True) -> torch.Tensor:
        """Logits ``[batch, pos, vocab]`` for ``input_ids`` ``[batch, pos]``.

        ``causal=False`` drops the causal mask (every key visible): the model was trained with it,
        so this shows what breaks when a query may read the future.

        Raises:
            ValueError: ``input_ids`` is not 2-D, longer than ``max_positions``, or has an id
                outside ``0…vocab_size−1``.
        """
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be [batch, pos], got shape {tuple(input_ids.shape)}")
        n = input_ids.size(1)
        if n > self.config.max_positions:
            raise ValueError(f"the causal model takes at most {self.config.max_positions} tokens, got {n}")
        if input_ids.numel() and (input_ids.min() < 0 or input_ids.max() >= self.vocab_size):
            raise ValueError(f"token ids must be in 0…{self.vocab_size - 1}")
        x = self.token_embedding(input_ids) + self.position_embedding(torch.arange(n))  # [batch, pos, d_model]
        mask = causal_mask(n)[None, None] if causal else None  # [1, 1, query_pos, key_pos], True = may attend
        for layer in self.layers:
            x = layer(x, mask)
        return self.unembed(x)


# ---------------------------------------------------------------- task and scores


def repeated_tokens(batch: int, period: int, length: int, vocab_size: int,
                    generator: torch.Generator) -> torch.Tensor:
    """``[batch, length]`` long: ``period`` uniform random tokens, repeated until ``length``.

    The task of Olsson et al. (2022) §"Induction heads": the first period cannot be predicted
    (loss ≈ ln vocab), every repeat can, by copying what followed the previous occurrence.
    """
    first = torch.randint(0, vocab_size, (batch, period), generator=generator)
    reps = math.ceil(length / period)
    return first.repeat(1, reps)[:, :length]


def previous_token_score(weights: torch.Tensor) -> torch.Tensor:
    """Mean weight on key = query − 1, per layer-head: ``weights [batch, head, query_pos, key_pos]`` → ``[head]``.

    Queries 1…pos−1 (query 0 has no previous token). Definition as in Olsson et al. (2022).
    """
    diag = torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1)  # [batch, head, pos-1]
    return diag.mean(dim=(0, 2))


def induction_score(weights: torch.Tensor, period: int) -> torch.Tensor:
    """Mean weight on the token after the previous occurrence of the current token, on a sequence
    repeating with ``period``: the diagonal ``key = query − period + 1`` over queries ``period…pos−1``.

    ``weights [batch, head, query_pos, key_pos]`` → ``[head]`` (Olsson et al. 2022; Elhage et al. 2021).
    """
    diag = torch.diagonal(weights, offset=-(period - 1), dim1=-2, dim2=-1)  # query q = k + period − 1
    return diag[..., 1:].mean(dim=(0, 2))  # drop query period−1 (its target is key 0 of a first occurrence)


def token_losses(logits: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of predicting token t+1 from row t: ``[batch, pos−1]`` (nats)."""
    return nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), input_ids[:, 1:], reduction="none")


def in_context_losses(model: CausalLM, input_ids: torch.Tensor, period: int, *, causal: bool = True) -> dict:
    """Mean loss (nats) predicting the first period vs the repeats: ``{"first": …, "repeat": …, "all": …}``.

    "first" = targets 1…period−1 (unpredictable: ≈ ln vocab); "repeat" = targets period…pos−1
    (predictable by induction). Their difference is the in-context learning of Olsson et al. (2022).
    """
    with torch.no_grad():
        losses = token_losses(model(input_ids, causal=causal), input_ids)  # [batch, pos-1]
    return {"first": float(losses[:, :period - 1].mean()), "repeat": float(losses[:, period - 1:].mean()),
            "all": float(losses.mean())}


def head_scores(model: CausalLM, *, batch: int = 64, period: int = 24, length: int = 48, seed: int = 12345,
                causal: bool = True) -> dict:
    """Previous-token and induction score of every head on held-out random repeated sequences.

    ``seed`` is not the training seed (training draws from ``config.seed``), so the sequences are
    held out. Returns ``{"previous_token": [[layer][head]], "induction": [[layer][head]],
    "loss": in_context_losses(...)}`` (plain floats).
    """
    from ..nn.hooks import capture

    ids = repeated_tokens(batch, period, length, model.vocab_size, torch.Generator().manual_seed(seed))
    with torch.no_grad(), capture(model, only=lambda name: name.endswith(".weights")) as stages:
        model(ids, causal=causal)
    n = model.config.n_layers
    prev = [previous_token_score(stages[f"layers.{i}.attention.weights"]).tolist() for i in range(n)]
    ind = [induction_score(stages[f"layers.{i}.attention.weights"], period).tolist() for i in range(n)]
    return {"previous_token": prev, "induction": ind,
            "loss": in_context_losses(model, ids, period, causal=causal)}


# ---------------------------------------------------------------- weights on disk


def verify_weights(path: Path = WEIGHTS_PATH, expected_sha256: str | None = None) -> None:
    """Check that ``path`` exists and its SHA-256 is ``expected_sha256`` (default :data:`WEIGHTS_SHA256`).

    Raises:
        CausalUnavailable: missing / unreadable file, or a different hash (the message names both
            hashes and how to regenerate the file).
    """
    require_sha256(path, WEIGHTS_SHA256 if expected_sha256 is None else expected_sha256, CausalUnavailable,
                   what="causal model weights",
                   unreadable_fix="restore the file from git or rerun `python -m transformer_core.models.train_causal --write`",
                   mismatch="are not the committed ones (SHA-256 {actual}, expected {expected}): restore the file "
                            "from git (`git checkout -- transformer_core/models/data/causal_model.safetensors`) or retrain "
                            "with `python -m transformer_core.models.train_causal --write`.")


def checkpoint_steps(path: Path = WEIGHTS_PATH) -> list[int]:
    """Training steps saved in the weights file (the last one is the final model)."""
    return training_log()["checkpoint_steps"]


def training_log(path: Path = TRAINING_LOG_PATH) -> dict:
    """The committed training record: config, seed, losses per step, checkpoint steps, time."""
    return json.loads(Path(path).read_text())


def build_causal_model(weights_path: Path = WEIGHTS_PATH, *, step: int | None = None,
                       expected_sha256: str | None = None) -> CausalLM:
    """Verify ``weights_path`` and load checkpoint ``step`` (default: the final model), in eval mode.

    Raises:
        CausalUnavailable: hash mismatch, unreadable file, no such checkpoint, or tensors that
            do not fit :class:`CausalLM`.
    """
    verify_weights(weights_path, expected_sha256)
    from safetensors import safe_open

    try:
        with safe_open(str(weights_path), framework="pt") as f:
            meta = f.metadata() or {}
            config = CausalConfig(**json.loads(meta["config"]))
            steps = json.loads(meta["checkpoint_steps"])
            chosen = steps[-1] if step is None else step
            if chosen not in steps:
                raise CausalUnavailable(f"no checkpoint at step {chosen}; have {steps}")
            prefix = f"step_{chosen}."
            state = {k[len(prefix):]: f.get_tensor(k) for k in f.keys() if k.startswith(prefix)}
    except CausalUnavailable:
        raise
    except Exception as err:
        raise CausalUnavailable(f"cannot read causal model weights {weights_path}: {err}") from err
    model = CausalLM(config)
    try:
        model.load_state_dict(state)
    except RuntimeError as err:
        raise CausalUnavailable(f"causal model weights do not fit the model: {err}") from err
    return model.eval()


@lru_cache(maxsize=16)
def _load_cached(step: int | None) -> CausalLM:
    return build_causal_model(step=step)


def load_causal_model(step: int | None = None) -> CausalLM:
    """The trained causal model (checkpoint ``step``, default final), after the SHA-256 check.

    Cached per process and shared: never mutate it (capture is thread-private).

    Raises:
        CausalUnavailable: see :func:`build_causal_model`.
    """
    return _load_cached(step)


def config_dict(config: CausalConfig) -> dict:
    return asdict(config)


def parse_tokens(text: str, vocab_size: int = CAUSAL_CONFIG.vocab_size) -> list[int]:
    """Token ids from text: integers separated by spaces or commas, e.g. ``"5 17 3 5 17 3"``.

    Raises:
        ValueError: a word is not an integer in ``0…vocab_size−1`` (the message names it).
    """
    ids = []
    for word in text.replace(",", " ").split():
        # ASCII digits only (str.isdigit also takes "²" and "５", which int() then refuses), and short
        # enough for int() (Python refuses more than 4,300 digits)
        if not _TOKEN_ID.fullmatch(word) or int(word) >= vocab_size:
            raise ValueError(_("{word} is not a token id: type whole numbers from 0 to {last}").format(
                word=repr(word[:20]) + ("…" if len(word) > 20 else ""), last=vocab_size - 1))
        ids.append(int(word))
    return ids


def run_causal(ids: list[int], *, step: int | None = None, causal: bool = True):
    """Run the trained causal model (checkpoint ``step``) on one sequence of token ids and capture every stage.

    Returns a :class:`~transformer_core.records.trace.Trace` with batch 1, tokens the ids as strings, ``mask``
    bool ``[1, 1, query_pos, key_pos]`` (the causal mask, ``True`` = may attend; ``None`` with
    ``causal=False``), stages ``layers.{i}.attention.*`` plus ``logits`` ``[1, pos, vocab]`` and
    ``token_loss`` ``[1, pos−1]`` (nats predicting token t+1 from row t).

    Raises:
        ValueError: no token, too many tokens or an id out of range.
        CausalUnavailable: the committed weights are missing or corrupt.
    """
    from ..nn.hooks import capture
    from ..records.trace import Trace

    if not ids:
        raise ValueError(_("no tokens: type or generate a sequence"))
    model = load_causal_model(step)
    input_ids = torch.tensor([ids], dtype=torch.long)  # [batch=1, pos]
    with torch.no_grad(), capture(model) as stages:
        logits = model(input_ids, causal=causal)
    n = len(ids)
    mask = causal_mask(n)[None, None].numpy() if causal else None
    arrays = {name: t.numpy() for name, t in stages.items()}
    arrays["logits"] = logits.numpy()
    arrays["token_loss"] = token_losses(logits, input_ids).numpy()
    tokens = tuple(str(i) for i in ids)
    return Trace(tokens=(tokens,), lengths=(n,), truncated=(False,), mask=mask, stages=arrays,
                 settings={"model": "causal", "step": step, "causal": causal, **config_dict(model.config)})
