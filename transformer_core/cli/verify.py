"""``attention-export --model PATH --verify``: our numbers for a decoder next to Hugging Face's, for a user to see.

The same token ids go to our model (:mod:`transformer_core.models.checkpoint`) and to ``transformers``'
``AutoModelForCausalLM`` read from the same folder or GGUF file, float32 with eager attention (the softmax weights
are then materialised; ``output_attentions=True`` returns them). Printed: the largest absolute difference of the
logits and of each layer's attention weights, and whether both tokenizers give the same ids. ``transformers`` is
only imported here, never when a model runs.
"""
from __future__ import annotations

import argparse
import os

import torch

from ..nn.hooks import capture
from ..text.i18n import _
from .args import ExportError, UsageError

TOLERANCE = 1e-4  # the parity tests' bound, for logits and attention weights
DEFAULT_TEXT = "When Mary and John went to the store, John gave a drink to"


def _reference(face):
    """Hugging Face's model and tokenizer for the decoder ``face`` (eager attention, float32, offline)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never a download: the files are local
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise ExportError(_("--verify compares with Hugging Face transformers, which is not installed: "
                            "pip install transformers")) from None
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # the report is ours: no progress bars or warnings in between
    hf_logging.disable_progress_bar()
    if face.checkpoint is None:
        from ..models.gguf_weights import gguf_path

        path = gguf_path()
    else:
        path = face.checkpoint.path
    where, extra = (str(path.parent), {"gguf_file": path.name}) if path.is_file() else (str(path), {})
    try:
        model = AutoModelForCausalLM.from_pretrained(where, attn_implementation="eager", dtype=torch.float32,
                                                     **extra)
        tokenizer = AutoTokenizer.from_pretrained(where, **extra)
    except Exception as err:  # noqa: BLE001 transformers raises many kinds; the first line says which
        raise ExportError(_("Hugging Face transformers cannot read {path}: {reason}").format(
            path=path, reason=str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__)) from None
    return model.eval().requires_grad_(False), tokenizer


def compare(face, text: str, max_tokens: int = 128) -> dict:
    """Run ``text`` through our decoder and Hugging Face's: ``{"n_tokens", "same_ids" (bool), "logits" (largest
    |ours − theirs|), "weights" (one per layer), "worst_layer"}``.

    Raises:
        ExportError: transformers is missing or cannot read the files.
    """
    hf, hf_tokenizer = _reference(face)
    ids = face.encode(text)[0][:max_tokens]
    if not ids:
        raise UsageError(_("no tokens: type at least one word"))
    special = face.checkpoint is not None and face.checkpoint.add_special_tokens
    theirs_ids = list(hf_tokenizer(text, add_special_tokens=special)["input_ids"])[:max_tokens]
    model = face.module
    with torch.no_grad(), capture(model, only=lambda n: n.endswith("attention.weights")) as stages:
        logits = model(torch.tensor([ids]))[0]
    with torch.no_grad():
        out = hf(torch.tensor([ids]), output_attentions=True, use_cache=False)
    weights = [(stages[f"layers.{i}.attention.weights"][0] - a[0]).abs().max().item()
               for i, a in enumerate(out.attentions)]
    return {"n_tokens": len(ids), "same_ids": theirs_ids == ids, "logits": (logits - out.logits[0]).abs().max().item(),
            "weights": weights, "worst_layer": max(range(len(weights)), key=weights.__getitem__)}


def report(args: argparse.Namespace, sentences: list[str]) -> str:
    """The lines ``--verify`` prints; raises ExportError (exit 1) after them when a difference exceeds
    :data:`TOLERANCE` or the tokenizers disagree, so a script can rely on the exit code."""
    from ..models import Decoder
    from .traces import model_of

    face = model_of(args)
    if not isinstance(face, Decoder):
        raise UsageError(_("--verify compares a decoder with Hugging Face's: use --model smollm2 or a local "
                           "checkpoint's path"))
    text = sentences[0] if sentences else DEFAULT_TEXT
    result = compare(face, text, args.max_tokens or 128)
    lines = [face.describe(),
             _("{n} tokens; same token ids as Hugging Face's tokenizer: {same}").format(
                 n=result["n_tokens"], same=_("yes") if result["same_ids"] else _("NO")),
             _("logits: largest |ours − Hugging Face| = {diff:.2e}").format(diff=result["logits"])]
    lines += [_("layer {layer} attention weights: largest difference {diff:.2e}").format(layer=i, diff=d)
              for i, d in enumerate(result["weights"])]
    worst = max([result["logits"], *result["weights"]])
    ok = worst <= TOLERANCE and result["same_ids"]
    lines.append((_("agree within {tol:g}") if ok else _("DIFFER beyond {tol:g}")).format(tol=TOLERANCE))
    print("\n".join(lines))
    if not ok:
        raise ExportError(_("our numbers differ from Hugging Face's (largest difference {diff:.2e})").format(
            diff=worst))
    return "\n".join(lines)
