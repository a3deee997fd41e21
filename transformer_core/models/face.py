"""One face for every model: what an analysis, the command line or a page may ask of a model, whichever it is.

:class:`Model` is the protocol; the adapters below wrap the existing modules without changing them: the random toy
encoder (:class:`Toy`), MiniLM-L6 (:class:`MiniLMFace`), the trained causal model (:class:`CausalFace`) and the
LLaMA-family decoders — SmolLM2 and any local checkpoint (:class:`Decoder`). Get one from
:func:`transformer_core.models.load` (by name or path) or :func:`transformer_core.models.from_settings` (the model
that made a trace), never by comparing names.

In the spirit of TransformerLens's ``HookedTransformer`` and the LLM Transparency Tool's ``TransparentLlm``: sizes,
tokens, a run with every stage captured, an intervention, and the weights analyses read (W_O per layer, W_U).
Shape legend: layer, head, d_head, d_model, vocab. W_O in the math convention ``concat @ W_O``:
``[n_heads·d_head, d_model]`` = ``nn.Linear.weight.T``.
"""
from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from ..text.i18n import _


@dataclass(frozen=True)
class ModelConfig:
    """A model's sizes in the field's names. ``vocab`` is ``None`` for the toy (its tokens are hashed to random
    vectors, not looked up); ``max_positions`` is the longest input it takes; ``causal``: queries see only earlier
    positions."""

    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_model: int
    d_head: int
    vocab: int | None
    max_positions: int
    causal: bool


@runtime_checkable
class Model(Protocol):
    """What every model offers. ``name``: its registry name (``"smollm2"``) or its path (a local checkpoint)."""

    name: str

    @property
    def config(self) -> ModelConfig: ...

    @property
    def module(self): ...  # the torch module (loaded on first use)

    def describe(self) -> str: ...

    def encode(self, text: str) -> tuple[list[int], list[str]]: ...

    def run(self, text: str, **options): ...

    def intervene(self, heads, mode: str = "zero", *, real=None,
                  reference=None) -> contextlib.AbstractContextManager: ...

    def output_projections(self) -> list[tuple[np.ndarray, np.ndarray]]: ...

    def unembedding(self): ...


class Face:
    """What the adapters share: W_O read from ``module.layers[i].attention.W_O``, head ablation through
    :func:`~transformer_core.nn.head_ablation.ablate`, no unembedding unless the model has one."""

    name = "model"
    resizable = False  # whether its sizes are options of a run (the toy's are)

    def output_projections(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """``[(W_O [n_heads·d_head, d_model], b_O [d_model]) per layer]``, float64 copies (b_O zeros when the model
        has no bias)."""
        out = []
        for layer in self.module.layers:
            linear = layer.attention.W_O  # nn.Linear: y = concat @ weight.T + bias
            weight = linear.weight.detach().double().numpy().T.copy()
            bias = linear.bias.detach().double().numpy().copy() if linear.bias is not None \
                else np.zeros(weight.shape[1])
            out.append((weight, bias))
        return out

    @contextlib.contextmanager
    def intervene(self, heads, mode: str = "zero", *, real=None, reference=None) -> Iterator[None]:
        """Forward calls of :attr:`module` inside the block run with ``heads`` knocked out, in this thread only
        (:func:`~transformer_core.nn.head_ablation.ablate`): ``heads`` is ``[(layer, head), …]`` or a bool mask
        ``[n_layers, batch or 1, n_heads]`` (a batch may ablate another head in each row); each chosen head's
        context ``[batch, head, query_pos, d_head]`` is zeroed (``mode="zero"``) or replaced by ``reference``'s
        mean (``"mean"``) or the sentence's mean over its ``real`` tokens (``"mean_sentence"``).

        Raises:
            ValueError: an unknown mode, ``"mean"`` without ``reference``. KeyError: a layer the model does not have.
        """
        from ..nn.head_ablation import ablate

        with ablate(self.module, heads, mode, real, reference):
            yield

    def unembedding(self):
        """W_U ``[vocab, d_model]`` (logits = normed residual @ W_U.T), or ``None`` for an encoder."""
        return


class Toy(Face):
    """The random-weight toy encoder of ``encoder`` (an :class:`~transformer_core.nn.config.EncoderConfig`), run
    with ``tokenizer``, masks and ``max_tokens`` as :func:`~transformer_core.models.toy.run_toy` takes them."""

    name = "toy"
    resizable = True

    def __init__(self, encoder=None, **run_options) -> None:
        from ..nn.config import EncoderConfig

        self.encoder = encoder if encoder is not None else EncoderConfig()
        self.run_options = run_options
        self._module = None

    @classmethod
    def from_settings(cls, settings: dict) -> Toy:
        """The toy that made a trace, rebuilt from its settings (the same weights, bit for bit).

        Raises:
            ValueError: the settings do not describe an encoder.
        """
        from ..nn.config import EncoderConfig

        fields = {f.name for f in dataclasses.fields(EncoderConfig)}
        try:
            return cls(EncoderConfig(**{k: v for k, v in settings.items() if k in fields}))
        except (TypeError, ValueError) as err:
            raise ValueError(f"cannot rebuild the toy model from this trace's settings: {err}") from None

    @property
    def config(self) -> ModelConfig:
        e = self.encoder
        return ModelConfig(e.n_layers, e.n_heads, e.n_kv_heads or e.n_heads, e.d_model, e.d_model // e.n_heads, None,
                           self.run_options.get("max_tokens", 64), bool(self.run_options.get("causal", False)))

    @property
    def module(self):
        if self._module is None:
            from ..nn.encoder import Encoder

            self._module = Encoder(self.encoder).eval()
        return self._module

    def describe(self) -> str:
        return describe_settings({"model": "toy", **self.encoder.__dict__})

    def encode(self, text: str) -> tuple[list[int], list[str]]:
        from ..text.tokenize import word_tokenize

        tokens = word_tokenize(text)
        return list(range(len(tokens))), tokens

    def run(self, text: str | list[str], **options):
        from .toy import run_toy

        sentences = [text] if isinstance(text, str) else list(text)
        return run_toy(sentences, self.encoder, **{**self.run_options, **options})


class MiniLMFace(Face):
    """MiniLM-L6 (all-MiniLM-L6-v2), bidirectional, 6 layers × 12 heads (:mod:`transformer_core.models.minilm`)."""

    name = "minilm"

    @property
    def config(self) -> ModelConfig:
        from .minilm import MAX_POSITIONS, MINILM_CONFIG, VOCAB_SIZE

        c = MINILM_CONFIG
        return ModelConfig(c.n_layers, c.n_heads, c.n_heads, c.d_model, c.d_model // c.n_heads, VOCAB_SIZE,
                           MAX_POSITIONS, False)

    @property
    def module(self):
        from .minilm import load_minilm

        return load_minilm()[0]

    def describe(self) -> str:
        return describe_settings({"model": "minilm"})

    def encode(self, text: str) -> tuple[list[int], list[str]]:
        from ..text.tokenize import wordpiece_tokenize

        tokens = wordpiece_tokenize(text)
        return list(range(len(tokens))), list(tokens)

    def run(self, text: str | list[str], **options):
        from .minilm_trace import run_minilm

        return run_minilm([text] if isinstance(text, str) else list(text), **options)


class CausalFace(Face):
    """The causal model trained in this repository, at checkpoint ``step`` (``None``: the final weights)."""

    name = "causal"

    def __init__(self, step: int | None = None) -> None:
        self.step = step

    @property
    def config(self) -> ModelConfig:
        from .causal import CAUSAL_CONFIG as c

        return ModelConfig(c.n_layers, c.n_heads, c.n_heads, c.d_model, c.d_model // c.n_heads, c.vocab_size,
                           c.max_positions, True)

    @property
    def module(self):
        from .causal import load_causal_model

        return load_causal_model(self.step)

    def describe(self) -> str:
        return describe_settings({"model": "causal", "step": self.step})

    def encode(self, text: str) -> tuple[list[int], list[str]]:
        from .causal import parse_tokens

        ids = parse_tokens(text)
        return ids, [str(i) for i in ids]

    def run(self, text: str, **options):
        from .causal import run_causal

        return run_causal(self.encode(text)[0], step=self.step, **options)

    def unembedding(self):
        return self.module.unembed.weight


class Decoder(Face):
    """A LLaMA-family decoder on our modules: SmolLM2-135M (``checkpoint=None``) or a local checkpoint
    (:class:`~transformer_core.models.checkpoint.Checkpoint`)."""

    def __init__(self, checkpoint=None) -> None:
        self.checkpoint = checkpoint
        self.name = "smollm2" if checkpoint is None else str(checkpoint.path)

    def parts(self):
        """``(module, tokenizer, add_special_tokens)``: what an analysis of a decoder runs on (SmolLM2's are loaded
        once per process; raises SmolLM2Unavailable when it is missing)."""
        if self.checkpoint is None:
            from .smollm2 import load_smollm2

            model, tokenizer = load_smollm2()
            return model, tokenizer, False
        return self.checkpoint.model, self.checkpoint.tokenizer, self.checkpoint.add_special_tokens

    @property
    def tokenizer(self):
        return self.parts()[1]

    @property
    def config(self) -> ModelConfig:
        c = self.module.config
        return ModelConfig(c.n_layers, c.n_heads, c.n_kv_heads, c.d_model, c.d_head, c.vocab_size, c.max_positions,
                           True)

    @property
    def module(self):
        return self.parts()[0]

    def describe(self) -> str:
        c = self.module.config
        if self.checkpoint is None:
            return "SmolLM2-135M-Instruct: " + _("{layers} layers, {heads} heads ({kv} key/value heads), d_model {d}"
                                               ).format(layers=c.n_layers, heads=c.n_heads, kv=c.n_kv_heads,
                                                        d=c.d_model)
        text = self.checkpoint.name + ": " + _("{layers} layers, {heads} heads ({kv} key/value heads), d_model {d}"
                                               ).format(layers=c.n_layers, heads=c.n_heads, kv=c.n_kv_heads,
                                                        d=c.d_model)
        if self.checkpoint.chat_template:
            text += _("; its chat template is not applied (the text runs as typed)")
        return text

    def encode(self, text: str) -> tuple[list[int], list[str]]:
        from .smollm2 import encode

        _model, tokenizer, special = self.parts()
        ids, _raw, labels = encode(text, tokenizer, add_special_tokens=special)
        return ids, labels

    def run(self, text: str, **options):
        """:func:`~transformer_core.models.smollm2_trace.run_smollm2` on this decoder: the trace only (the
        prediction is dropped; call it yourself for both)."""
        from .smollm2_trace import run_smollm2

        return run_smollm2(text, checkpoint=self.checkpoint, **options)[0]

    def unembedding(self):
        model = self.module
        return model.embed.weight if model.config.tied else model.unembed.weight


def describe_settings(settings: dict) -> str:
    """The model a trace's settings name, in words (in the current language): ``"MiniLM-L6 (all-MiniLM-L6-v2)"``,
    ``"trained causal model (step 4000)"``, the toy's seed and sizes, a local checkpoint's name."""
    s = settings
    model = s.get("model")
    if model == "toy":
        text = _("toy encoder (random weights, seed {seed}), d_model={d_model}, {heads} heads").format(
            seed=s.get("seed"), d_model=s.get("d_model"), heads=s.get("n_heads"))
        n_kv = s.get("n_kv_heads")
        if isinstance(n_kv, int) and n_kv != s.get("n_heads"):
            text += _(" on {n_kv} key/value heads").format(n_kv=n_kv)
        return text
    if model == "minilm":
        return "MiniLM-L6 (all-MiniLM-L6-v2)"
    if model == "causal":
        return _("trained causal model (step {step})").format(
            step=s.get("step") if s.get("step") is not None else _("final"))
    return str(s.get("name") or model or "model")
