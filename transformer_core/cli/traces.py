"""The export command's model runs: the trace its arguments describe (toy, MiniLM, the causal model, SmolLM2 or a
local checkpoint, each reached through its face: :func:`model_of`), the work check made before a run, and the
checks of batch, layer and head against the trace.
"""
from __future__ import annotations

import argparse

from ..figures.slide import describe  # noqa: F401 (the slide's sentence-and-settings line; export, moves)
from ..models import CausalFace, Decoder, MiniLMFace, Model, face_type, load
from ..models.toy import run_toy
from ..nn.config import EncoderConfig
from ..records.trace import Trace
from ..text.i18n import _, ngettext
from .args import (
    MAX_JSON_NUMBERS,
    MAX_NUMBERS,
    MAX_SENTENCES,
    MINILM_MAX_TOKENS,
    TOY_DEFAULTS,
    ExportError,
    UsageError,
    split_text,
)


def run_minilm_trace(sentences: list[str], *, padding: bool = True, max_tokens: int = MINILM_MAX_TOKENS) -> Trace:
    """MiniLM-L6 trace via ``transformer_core.models.minilm_trace.run_minilm`` (imported only when asked for).

    Raises:
        ExportError: the module or the MiniLM weights are not available.
    """
    try:
        from ..models.minilm_trace import run_minilm
    except ImportError as err:
        raise ExportError(_("MiniLM export is unavailable: cannot import {name} ({reason}); use --model toy").format(
            name="transformer_core.models.minilm_trace.run_minilm", reason=err)) from None
    try:
        return run_minilm(sentences, padding=padding, max_tokens=max_tokens)
    except RuntimeError as err:  # pretrained.PretrainedUnavailable and friends
        raise ExportError(_("MiniLM export failed: {reason}").format(reason=err)) from None


def wordpiece_lengths(sentences: list[str]) -> list[int]:
    """WordPiece tokens of each sentence, ``[CLS]`` and ``[SEP]`` included.

    Raises:
        ExportError: MiniLM's tokenizer is missing or corrupt (the message says so and what to do).
    """
    from ..text.tokenize import wordpiece_tokenize

    try:
        return [len(wordpiece_tokenize(s)) for s in sentences]
    except Exception as err:  # noqa: BLE001 PretrainedUnavailable, or tokenizers' bare Exception for a corrupt file
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ExportError(_("the BERT WordPiece tokenizer is not available (it comes with the trained model "
                            "MiniLM-L6): {detail}; use --tokenizer word").format(detail=detail)) from None


def check_work(args: argparse.Namespace, sentences: list[str], fmt: str = "png") -> None:
    """Refuse a run that would capture more than :data:`MAX_NUMBERS` numbers (:data:`MAX_JSON_NUMBERS`
    for JSON), before it starts.

    Raises:
        UsageError: too many sentences or numbers (the message names the sizes to lower).
        ExportError: ``wordpiece`` asked for and unavailable.
    """
    if len(sentences) > MAX_SENTENCES:
        raise UsageError(_("{n} sentences; at most {limit} per export").format(n=len(sentences), limit=MAX_SENTENCES))
    face = model_of(args)
    if isinstance(face, CausalFace):
        c = face.config
        n_layers, n_heads, d_model = c.n_layers, c.n_heads, c.d_model
        counts = [len(" ".join(sentences).replace(",", " ").split())]
    elif isinstance(face, Decoder):
        n_layers, n_heads, d_model, lengths = decoder_sizes(face, sentences)
        counts = [min(n, args.max_tokens or SMOLLM2_MAX_TOKENS) for n in lengths]
    elif isinstance(face, MiniLMFace):
        c, cap = face.config, args.max_tokens or MINILM_MAX_TOKENS
        n_layers, n_heads, d_model = c.n_layers, c.n_heads, c.d_model
        if cap < 2:
            raise UsageError(_("--max-tokens must be at least 2 for MiniLM ([CLS] and [SEP])"))
        counts = [min(n, cap) for n in wordpiece_lengths(sentences)]
    else:
        opt = {k: (getattr(args, k) if getattr(args, k) is not None else v) for k, v in TOY_DEFAULTS.items()}
        n_layers, n_heads, d_model, cap = opt["n_layers"], opt["n_heads"], opt["d_model"], opt["max_tokens"]
        if opt["tokenizer"] == "wordpiece":
            counts = [min(n, cap) for n in wordpiece_lengths(sentences)]
        else:
            from ..text.tokenize import word_tokenize

            counts = [min(len(word_tokenize(s)), cap) for s in sentences]
    n, b = max(counts, default=0), len(sentences)
    numbers = n_layers * b * (3 * n_heads * n * n + 12 * n * d_model) + b * n * d_model
    limit = MAX_JSON_NUMBERS if fmt == "json" else MAX_NUMBERS
    if numbers > limit:
        sizes = (ngettext("{n} sentence", "{n} sentences", b).format(n=b) + " × " + ngettext("{n} token", "{n} tokens", n).format(n=n)
                 + ", " + ngettext("{n} layer", "{n} layers", n_layers).format(n=n_layers) + ", "
                 + ngettext("{n} head", "{n} heads", n_heads).format(n=n_heads) + f", d_model {d_model}")
        most = (_("at most {limit} for JSON") if fmt == "json" else _("at most {limit}")).format(limit=f"{limit:,}")
        raise UsageError(_("this run would capture {numbers} numbers ({sizes}); {most}: use fewer or shorter "
                           "sentences, a lower --max-tokens, fewer layers or heads, or a smaller --d-model").format(
            numbers=f"{numbers:,}", sizes=sizes, most=most))


def build_trace(args: argparse.Namespace) -> Trace:
    """The trace the arguments describe (toy encoder or MiniLM).

    Raises:
        ValueError: bad sizes, no text, toy-only options given for MiniLM.
    """
    sentences = split_text(args.text)
    face = model_of(args)
    if isinstance(face, CausalFace):
        return run_causal_trace(args, sentences)
    if args.step is not None:
        raise UsageError(_("--step applies only to --model causal (a training checkpoint)"))
    if isinstance(face, MiniLMFace):
        given = [f"--{k.replace('_', '-')}" for k in ("d_model", "n_heads", "n_layers", "seed", "tokenizer")
                 if getattr(args, k) is not None]
        if args.causal:
            given.append("--causal")
        if given:
            raise UsageError(ngettext("{options} applies only to --model toy (MiniLM-L6 is a fixed, bidirectional "
                                      "6-layer × 12-head model)",
                                      "{options} apply only to --model toy (MiniLM-L6 is a fixed, bidirectional "
                                      "6-layer × 12-head model)", len(given)).format(options=", ".join(given)))
        return _ablated_minilm(args, sentences) if args.ablate else \
            run_minilm_trace(sentences, padding=args.padding, max_tokens=args.max_tokens or MINILM_MAX_TOKENS)
    if isinstance(face, Decoder):
        if not args.ablate:
            return run_smollm2_trace(args, sentences, face)
        # a sentence's own mean would put later tokens' contexts into earlier positions of a causal model
        if args.ablate_mode == "mean_sentence":
            raise UsageError(_("--ablate-mode mean_sentence: SmolLM2 and local checkpoints ablate with zero or "
                               "mean (a sentence's own mean would show earlier tokens what comes later)"))
        from ..analysis.ablation.next_token import decoder_reference
        from ..models.gguf_weights import SmolLM2Unavailable

        try:
            sizes = face.config
            heads = _heads(args, sizes.n_layers, sizes.n_heads)
            # mean: each head's context averaged over the IOI reference prompts run on this model, pooled over
            # positions (the real-LLM page's variant)
            reference = decoder_reference("ioi", face) if args.ablate_mode == "mean" else None
        except SmolLM2Unavailable as err:
            raise ExportError(_("SmolLM2 export is unavailable: {reason}").format(reason=err)) from err
        with face.intervene(heads, args.ablate_mode, reference=reference):
            return _marked(run_smollm2_trace(args, sentences, face), heads, args.ablate_mode)
    if args.ablate:
        raise UsageError(_("--ablate applies only to --model minilm or causal"))
    opt = {k: (getattr(args, k) if getattr(args, k) is not None else v) for k, v in TOY_DEFAULTS.items()}
    config = EncoderConfig(d_model=opt["d_model"], n_heads=opt["n_heads"], n_layers=opt["n_layers"],
                           d_ff=4 * opt["d_model"], seed=opt["seed"])
    return run_toy(sentences, config, tokenizer=opt["tokenizer"], causal=bool(args.causal), padding=args.padding,
                   max_tokens=opt["max_tokens"])


SMOLLM2_MAX_TOKENS = 128  # the app's page limit; --max-tokens takes up to 2048


def model_of(args: argparse.Namespace) -> Model:
    """The model ``--model`` names: one of :func:`transformer_core.models.available` (the causal model at
    ``--step``), or the local checkpoint at that path (read once per process).

    Raises:
        CheckpointError: the path holds no checkpoint we run (a ``ValueError``: exit 2, naming what is supported).
    """
    return load(args.model, step=args.step)


def decoder_sizes(face: Decoder, sentences: list[str]) -> tuple[int, int, int, list[int]]:
    """``(n_layers, n_heads, d_model, tokens of each sentence)`` of a decoder; SmolLM2's sizes and 0 tokens when it
    is not installed (:func:`run_smollm2_trace` says so)."""
    from ..models.gguf_weights import SmolLM2Unavailable
    from ..nn.gqa import LlamaConfig

    try:
        c = face.config
        return c.n_layers, c.n_heads, c.d_model, [len(face.encode(s)[0]) for s in sentences]
    except SmolLM2Unavailable:
        c = LlamaConfig()  # SmolLM2-135M's sizes
        return c.n_layers, c.n_heads, c.d_model, [0 for _s in sentences]


def run_smollm2_trace(args: argparse.Namespace, sentences: list[str], face: Decoder | None = None) -> Trace:
    """SmolLM2-135M (:mod:`transformer_core.models.smollm2_trace`), or the local checkpoint ``face`` holds, on one
    prompt, cut to ``--max-tokens`` (default 128), its attention stages captured (q and k after RoPE; k, v repeated
    per query head).

    Raises:
        UsageError: toy-only options, more than one prompt, ``--max-tokens`` beyond the model's limit.
        ExportError: SmolLM2 is not installed (the message names the pip command) or its file is corrupt.
    """
    from ..models.gguf_weights import SmolLM2Unavailable
    from ..models.smollm2 import MAX_TOKENS

    checkpoint = None if face is None else face.checkpoint
    given = [f"--{k.replace('_', '-')}" for k in ("d_model", "n_heads", "n_layers", "seed", "tokenizer")
             if getattr(args, k) is not None] + (["--causal"] if args.causal is not None else [])
    if given and checkpoint is None:
        raise UsageError(ngettext("{options} applies only to --model toy (SmolLM2-135M is a fixed causal "
                                  "30-layer × 9-head model)",
                                  "{options} apply only to --model toy (SmolLM2-135M is a fixed causal "
                                  "30-layer × 9-head model)", len(given)).format(options=", ".join(given)))
    if given:
        raise UsageError(ngettext("{options} applies only to --model toy (a local checkpoint has its own sizes)",
                                  "{options} apply only to --model toy (a local checkpoint has its own sizes)",
                                  len(given)).format(options=", ".join(given)))
    if len(sentences) > 1:
        raise UsageError(_("--model smollm2 reads one prompt, got {n}: pass it in one --text on one line").format(
            n=len(sentences)))
    cap = args.max_tokens or SMOLLM2_MAX_TOKENS
    limit = MAX_TOKENS if checkpoint is None else min(MAX_TOKENS, checkpoint.model.config.max_positions)
    if not 1 <= cap <= limit:
        raise UsageError(_("--max-tokens must be in 1..{limit} for SmolLM2").format(limit=limit))
    try:
        from ..models.smollm2_trace import run_smollm2

        trace, _prediction = run_smollm2(sentences[0], max_tokens=cap, only=lambda n: ".attention." in n,
                                         checkpoint=checkpoint)
        return trace
    except SmolLM2Unavailable as err:
        raise ExportError(_("SmolLM2 export is unavailable: {reason}").format(reason=err)) from err


def run_causal_trace(args: argparse.Namespace, sentences: list[str]) -> Trace:
    """The trained causal model (:mod:`transformer_core.models.causal`) on one sequence of token ids
    (``--text "5 17 3 5 17 3"``), checkpoint ``--step`` (default final), causal mask on unless ``--no-causal``.

    Raises:
        UsageError: toy/MiniLM-only options, more than one sequence, ids that are not 0…63, more than 48 tokens,
            an unknown step.
        ExportError: the committed weights are missing or corrupt.
    """
    from ..models.causal import CAUSAL_CONFIG, CausalUnavailable, checkpoint_steps, parse_tokens, run_causal

    given = [f"--{k.replace('_', '-')}" for k in ("d_model", "n_heads", "n_layers", "seed", "tokenizer", "max_tokens")
             if getattr(args, k) is not None]
    if given:
        raise UsageError(ngettext("{options} applies only to --model toy or minilm (the causal model is a fixed "
                                  "2-layer × 4-head model)",
                                  "{options} apply only to --model toy or minilm (the causal model is a fixed "
                                  "2-layer × 4-head model)", len(given)).format(options=", ".join(given)))
    if len(sentences) > 1:  # a batch elsewhere; joining them silently would make one longer sequence
        raise UsageError(_("--model causal reads one sequence of token ids, got {n}: pass them in one --text on one "
                           "line").format(n=len(sentences)))
    try:
        ids = parse_tokens(sentences[0])
    except ValueError as err:
        raise UsageError(str(err)) from err
    if len(ids) > CAUSAL_CONFIG.max_positions:
        raise UsageError(_("{n} tokens; the causal model takes at most {limit}").format(
            n=len(ids), limit=CAUSAL_CONFIG.max_positions))
    try:
        steps = checkpoint_steps()
        if args.step is not None and args.step not in steps:
            raise UsageError(_("no checkpoint at step {step}; choose one of {choices}").format(
                step=args.step, choices=", ".join(map(str, steps))))
        if not args.ablate:
            return run_causal(ids, step=args.step, causal=args.causal is not False)
        from ..analysis.ablation import ablate
        from ..analysis.ablation.induction import causal_reference
        from ..models.causal import load_causal_model

        heads = _heads(args, CAUSAL_CONFIG.n_layers, CAUSAL_CONFIG.n_heads)
        model = load_causal_model(args.step)
        reference = causal_reference(model) if args.ablate_mode == "mean" else None
        with ablate(model, heads, args.ablate_mode, reference=reference):
            return _marked(run_causal(ids, step=args.step, causal=args.causal is not False), heads, args.ablate_mode)
    except (CausalUnavailable, OSError) as err:
        raise ExportError(_("causal model export is unavailable: {reason}").format(reason=err)) from err


def _heads(args: argparse.Namespace, n_layers: int, n_heads: int) -> tuple:
    """``--ablate`` as ``((layer, head), …)``. Raises UsageError naming the bad item."""
    from ..analysis.ablation import parse_heads

    try:
        return parse_heads(args.ablate, n_layers, n_heads)
    except ValueError as err:
        raise UsageError(f"--ablate: {err}") from None


def _marked(trace: Trace, heads: tuple, mode: str) -> Trace:
    """``trace`` with the ablation written into its settings (JSON, the HTML description)."""
    import dataclasses

    from ..analysis.ablation import format_heads

    return dataclasses.replace(trace, settings={**trace.settings, "ablate": format_heads(heads), "ablate_mode": mode})


def _ablated_minilm(args: argparse.Namespace, sentences: list[str]) -> Trace:
    """MiniLM with ``--ablate`` heads ablated (mean mode averages over each sentence's real tokens)."""
    import torch

    from ..analysis.ablation import ablate
    from ..models.minilm import load_minilm

    heads = _heads(args, 6, 12)
    cap = args.max_tokens or MINILM_MAX_TOKENS
    real = None
    if args.ablate_mode == "mean_sentence":  # the real tokens of each sentence, from an intact run's lengths
        lengths = run_minilm_trace(sentences, padding=args.padding, max_tokens=cap).lengths
        real = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    try:
        model, _ = load_minilm()
    except RuntimeError as err:
        raise ExportError(_("MiniLM export failed: {reason}").format(reason=err)) from None
    reference = None
    if args.ablate_mode == "mean":
        from ..analysis.ablation.embedding_reference import minilm_reference

        reference = minilm_reference(model=model)
    with ablate(model, heads, args.ablate_mode, real, reference):
        return _marked(run_minilm_trace(sentences, padding=args.padding, max_tokens=cap), heads, args.ablate_mode)


def check_selection(trace: Trace, stage: str, batch: int, layer: int, head: int | None) -> None:
    """Range checks with messages that say what exists.

    Raises:
        UsageError: batch, layer or head out of range.
    """
    n_batch = len(trace.tokens)
    if not 0 <= batch < n_batch:
        raise UsageError(_("--batch {batch} out of range: the text has {n} sentence(s), so 0..{last}").format(
            batch=batch, n=n_batch, last=n_batch - 1))
    n_layers = trace.n_layers
    if not 0 <= layer < n_layers:
        message = _("--layer {layer} out of range: the model has layers 0..{last}").format(layer=layer,
                                                                                            last=n_layers - 1)
        if getattr(face_type(trace.settings), "resizable", False):  # the toy's sizes are options
            message += _(" (raise --n-layers for a deeper toy model)")  # the space belongs to the language
        raise UsageError(message)
    n_heads = trace.stage(stage, layer).shape[1]
    if head is not None and not 0 <= head < n_heads:
        raise UsageError(_("--head {head} out of range: the model has heads 0..{last}").format(head=head,
                                                                                             last=n_heads - 1))
