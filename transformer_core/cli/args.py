"""The export command's arguments: options, their limits, and the checks made before any model runs.

Errors: :class:`UsageError` (a bad argument, exit 2) and :class:`ExportError` (cannot load or
render, exit 1). Every message is one line.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from ..text.i18n import DEFAULT, LANGUAGES, _, from_locale, language
from ..text.tokenize import normalize_text

PROG = "attention-export"
STAGES = ("q", "k", "v", "scores", "masked_scores", "weights", "context", "norms")  # norms: ‖α·f(x)‖ (cli/moves)
FORMATS = ("png", "svg", "html", "csv", "json")
EXTENSIONS = {".png": "png", ".svg": "svg", ".html": "html", ".htm": "html", ".csv": "csv", ".json": "json"}
IMAGE_FORMATS = ("png", "svg")
STDOUT = "-"  # --out -: standard output, for the text formats
TEXT_FORMATS = ("csv", "json", "svg", "html")
SLIDE_WIDTH, SLIDE_HEIGHT = 1280, 720
TOY_DEFAULTS = {"d_model": 64, "n_heads": 8, "n_layers": 1, "seed": 0, "tokenizer": "word", "max_tokens": 64}
MINILM_MAX_TOKENS = 128
# Sizes a run may ask for, stated in --help and checked while the arguments are parsed.
LIMITS = {"d_model": (1, 1024), "n_heads": (1, 64), "n_layers": (1, 12), "seed": (0, 2**31 - 1),
          "max_tokens": (1, 512), "width": (16, 4096), "height": (16, 4096)}
MAX_SCALE = 4.0  # PNG pixel multiplier
MAX_PIXELS = 8192  # an image side after --scale
MAX_SENTENCES = 64
# Numbers a run may capture (every stage of every layer, float32: 4 bytes each), checked on the
# tokenized text before the model runs: layers × sentences × (3 × heads × tokens² + 12 × tokens ×
# d_model) + sentences × tokens × d_model (exact for the toy encoder and MiniLM, d_ff = 4 d_model).
MAX_NUMBERS = 100_000_000
MAX_JSON_NUMBERS = 25_000_000  # --format json writes every one as text (~20 characters each)
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")



class ExportError(RuntimeError):
    """Rendering or loading failed for a reason outside the arguments (no Chromium, no MiniLM)."""


class UsageError(ValueError):
    """A bad command-line argument."""


def _model_name(value: str) -> str:
    """``--model``: a name of :func:`transformer_core.models.available`, or what looks like a path (it has a
    ``/``, ends in ``.gguf`` or exists); the checkpoint itself is read later, with its own message."""
    from ..models import available

    if value in available() or "/" in value or os.sep in value or value.lower().endswith(".gguf") \
            or os.path.exists(value):
        return value
    raise argparse.ArgumentTypeError(_("invalid choice: {value!r} (choose from {names}, or give the path of a "
                                       "local checkpoint)").format(value=value, names=", ".join(available())))


def check_image_size(width: int, height: int, scale: float) -> None:
    """Raises UsageError unless width and height are positive, scale is in (0, MAX_SCALE] and no
    side exceeds MAX_PIXELS after scaling (NaN and inf are refused too)."""
    if width <= 0 or height <= 0 or not 0 < scale <= MAX_SCALE:
        raise UsageError(_("--width and --height must be positive and --scale in (0, {max}], got {width}×{height} × "
                           "{scale}").format(max=f"{MAX_SCALE:g}", width=width, height=height, scale=scale))
    if max(width, height) * scale > MAX_PIXELS:
        raise UsageError(_("the image would be {width}×{height} px; at most {limit} px a side").format(
            width=f"{width * scale:.0f}", height=f"{height * scale:.0f}", limit=MAX_PIXELS))


def split_text(texts: list[str] | None) -> list[str]:
    """``--text`` values → sentences: each value may hold several lines; blank lines are dropped.

    Each value goes through :func:`~transformer_core.text.tokenize.normalize_text` first, as in the
    app: NFC, control characters as control pictures (``"\\x00"`` → ``"␀"``; so every SVG is
    well-formed XML); then line breaks (LF, CR, U+2028, U+2029) split the sentences.

    Raises:
        UsageError: nothing but white space.
    """
    sentences = [line.strip() for text in (texts or []) for line in normalize_text(text).splitlines()]
    sentences = [s for s in sentences if s]
    if not sentences:
        raise UsageError(_('empty text: pass at least one sentence, e.g. --text "the cat sat on the mat"'))
    return sentences


def resolve_output(out: str | None, fmt: str | None) -> tuple[Path | None, str]:
    """(path or ``None`` for the default name, format) from ``--out`` and ``--format``.

    A folder ``--out`` keeps the default file name inside it; ``--out -`` is standard output (``Path("-")``),
    for CSV, JSON, SVG and HTML only.

    Raises:
        UsageError: format cannot be inferred, or contradicts the extension.
        OSError: ``--out`` ends with a slash but is not an existing folder.
    """
    if out is None:
        return None, fmt or "png"
    if out == STDOUT:
        if fmt not in TEXT_FORMATS:
            raise UsageError(_("--out {out} writes to standard output: pass --format {formats} or {last} (PNG needs a "
                               "file)").format(out=STDOUT, formats=", ".join(TEXT_FORMATS[:-1]), last=TEXT_FORMATS[-1]))
        return Path(STDOUT), fmt
    path = Path(out)
    if path.is_dir():
        return path, fmt or "png"
    if out.endswith(("/", os.sep)):
        raise OSError(_("cannot write into {out!r}: no such folder").format(out=out))
    inferred = EXTENSIONS.get(path.suffix.lower())
    if fmt and inferred and fmt != inferred:
        raise UsageError(_("--format {fmt} contradicts the extension of --out {out!r}").format(fmt=fmt, out=out))
    if fmt is None and inferred is None:
        raise UsageError(_("cannot tell the format from --out {out!r}: use an extension ({extensions}) or pass "
                           "--format").format(out=out, extensions=", ".join(sorted(EXTENSIONS))))
    return path, fmt or inferred


def _bounded(name: str) -> Callable[[str], int]:
    """argparse ``type`` for a whole number within ``LIMITS[name]`` (the message states the range)."""
    low, high = LIMITS[name]

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(_("invalid int value: {text!r}").format(text=text)) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(_("{value} is outside {low}..{high}").format(value=value, low=low,
                                                                                     high=f"{high:,}"))
        return value

    return parse


def _scale(text: str) -> float:
    """argparse ``type`` for ``--scale``: a finite number in (0, MAX_SCALE]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(_("invalid float value: {text!r}").format(text=text)) from None
    if not 0 < value <= MAX_SCALE:  # NaN and inf fail here too
        raise argparse.ArgumentTypeError(_("{text} is not a number in (0, {max}]").format(text=text,
                                                                                         max=f"{MAX_SCALE:g}"))
    return value


def _range(name: str) -> str:
    low, high = LIMITS[name]
    return f"{low}–{high:,}"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage dump; main() prints it
        # argparse's own messages come from Python's standard library, in English: say in the reader's language
        # that they are about the arguments (in English the message stands alone, as before)
        raise UsageError(message if language() == "en" else _("bad arguments: {message}").format(message=message))


def language_asked(argv: list[str]) -> str:
    """The language of messages and figures: ``--lang`` in ``argv`` (read before parsing, so that a parse
    error and ``--help`` are in that language too), else the system's locale (``LC_ALL``, ``LC_MESSAGES``,
    ``LANG``, as gettext reads them), else English."""
    for i, arg in enumerate(argv):
        if arg == "--lang" and i + 1 < len(argv):
            return argv[i + 1] if argv[i + 1] in LANGUAGES else DEFAULT
        if arg.startswith("--lang="):
            code = arg.partition("=")[2]
            return code if code in LANGUAGES else DEFAULT
    locale = next((os.environ[k] for k in ("LC_ALL", "LC_MESSAGES", "LANG") if os.environ.get(k)), None)
    return from_locale(locale)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=_("Export an attention figure or the captured data for docs and slides."),
                epilog=_("Examples:") + "\n  " + "\n  ".join([
                    f'{PROG} --text "the cat sat on the mat" --stage weights --head 3 --causal',
                    f'{PROG} --text "the cat saw the cat" --stage masked_scores --causal --format csv',
                    f'{PROG} --model minilm --text "the bank of the river" --layer 5 --out bank.svg',
                ]) + "\n\n" + _("Limits, checked before the model runs (exit 2 beyond them):") + "\n  "
                + "\n  ".join([
                    f"d_model {_range('d_model')}, n_heads {_range('n_heads')}, n_layers {_range('n_layers')}, "
                    f"seed {_range('seed')}, max_tokens {_range('max_tokens')}, "
                    + _("at most {n} sentences").format(n=MAX_SENTENCES),
                    _("at most {n} captured numbers (~{mb} MB; {json} for --format json): layers × sentences × "
                      "(3 × heads × tokens² + 12 × tokens × d_model)").format(
                        n=f"{MAX_NUMBERS:,}", mb=MAX_NUMBERS * 4 // 10**6, json=f"{MAX_JSON_NUMBERS:,}"),
                    _("images {sizes} px a side, --scale up to {scale}, at most {limit} px a side after "
                      "scaling").format(sizes=_range("width"), scale=f"{MAX_SCALE:g}", limit=MAX_PIXELS)]),
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--text", action="append", metavar="TEXT",
                   help=_("a sentence; repeat it, or put one sentence per line, to make a batch"))
    p.add_argument("--model", type=_model_name, default="toy", metavar="{toy,minilm,causal,smollm2,PATH}",
                   help=_("toy random-weight encoder, MiniLM-L6, the trained causal model (--text = token ids 0-63), "
                          "or SmolLM2-135M (one prompt, at most 128 tokens unless --max-tokens)") + "; " +
                   _("PATH: a local LLaMA, Qwen2, Qwen3 or Mistral checkpoint (a Hugging Face folder or a .gguf "
                     "file), run as SmolLM2 is"))
    p.add_argument("--verify", action="store_true",
                   help=_("compare our logits and every layer's attention weights on --text with Hugging Face's "
                          "(eager attention, needs transformers) and print the largest differences"))
    p.add_argument("--step", type=int, help=_("causal: training checkpoint (default: the final model)"))
    p.add_argument("--ablate", metavar="HEADS",
                   help=_("minilm/causal: heads to ablate, e.g. L3H7,L4H2 (their context replaced before W_O)") + "; " +
                   _("smollm2 or a local checkpoint: zero or mean mode"))
    p.add_argument("--ablate-mode", choices=("zero", "mean", "mean_sentence"), default="zero",
                   help=_("zero: context = 0 (as head_mask did); mean: its mean per position over a reference set "
                          "(MiniLM: 16 everyday sentences; causal: 64 repeated sequences, seed 2024; smollm2 and local "
                          "checkpoints: 6 IOI-shaped prompts, pooled over positions); mean_sentence: "
                          "its mean over the same sentence's real tokens (default zero)"))
    p.add_argument("--d-model", type=_bounded("d_model"),
                   help=_("toy: width of every token vector, {range} (default 64)").format(range=_range("d_model")))
    p.add_argument("--n-heads", type=_bounded("n_heads"),
                   help=_("toy: attention heads, {range}, must divide --d-model (default 8)").format(
                       range=_range("n_heads")))
    p.add_argument("--n-layers", type=_bounded("n_layers"),
                   help=_("toy: encoder layers, {range} (default 1)").format(range=_range("n_layers")))
    p.add_argument("--seed", type=_bounded("seed"),
                   help=_("toy: seed of the random weights and embeddings, {range} (default 0)").format(range=_range("seed")))
    p.add_argument("--tokenizer", choices=("word", "wordpiece"), help=_("toy: tokenizer (default word)"))
    p.add_argument("--causal", action=argparse.BooleanOptionalAction, default=None,
                   help=_("toy: causal mask, each position sees only itself and earlier ones (default off); "
                        "causal model: on by default, --no-causal shows what breaks"))
    p.add_argument("--padding", action=argparse.BooleanOptionalAction, default=True,
                   help=_("padding mask, so no one attends to [PAD] (default on)"))
    p.add_argument("--max-tokens", type=_bounded("max_tokens"),
                   help=_("cut each sentence to this many tokens, {range} (default: toy 64, MiniLM 128)").format(
                       range=_range("max_tokens")))
    p.add_argument("--layer", type=int, default=0, help=_("encoder layer (default 0)"))
    p.add_argument("--head", type=int, help=_("attention head (default: all heads)"))
    p.add_argument("--stage", choices=STAGES, default="weights",
                   help=_("which matrix (default weights); norms = value-weighted norms ‖α·f(x)‖ (W_O from the model)"))
    p.add_argument("--view", choices=("rollout", "flow", "flow_raw", "dla", "logit-lens", "patching", "routes"),
                   help=_("instead of one layer: attention rollout or flow of --batch's sentence across every layer "
                        "(flow: rows normalised to sum 1 as Abnar & Zuidema's code; flow_raw: maximum flow in "
                        "capacity units; flow: at most 16 tokens); with --model smollm2 what the heads write: dla "
                        "(direct logit attribution), logit-lens, patching, routes (information-flow routes into the last token)"))
    p.add_argument("--threshold", type=float, default=0.04, metavar="T",
                   help=_("routes: contribution threshold in [0, 1) (default 0.04, as the LLM Transparency Tool)"))
    p.add_argument("--target", metavar="TOKEN", help=_("dla, logit-lens, patching: the token explained, e.g. \" Mary\" "
                                                      "(default: the model's prediction)"))
    p.add_argument("--contrast", metavar="TOKEN", help=_("dla, patching: the token whose logit is subtracted, "
                                                        "e.g. \" John\""))
    p.add_argument("--corrupt", metavar="TEXT", help=_("patching: the corrupted prompt, as many tokens as --text "
                                                      "(default: --contrast's last occurrence replaced by --target)"))
    p.add_argument("--batch", type=int, default=0, help=_("which sentence of the batch (default 0)"))
    p.add_argument("--format", choices=FORMATS, help=_("output format (default: from --out's extension, else png)"))
    p.add_argument("--out", metavar="PATH", help=_("output file or folder (default: a name like "
                   "weights_L0_H3_the-cat-sat.png); - writes CSV, JSON, SVG or HTML to standard output"))
    p.add_argument("--width", type=_bounded("width"), default=SLIDE_WIDTH,
                   help=_("image width in px, {range} (default {default})").format(range=_range("width"), default=SLIDE_WIDTH))
    p.add_argument("--height", type=_bounded("height"), default=SLIDE_HEIGHT,
                   help=_("image height in px, {range} (default {default})").format(range=_range("height"),
                                                                                     default=SLIDE_HEIGHT))
    p.add_argument("--scale", type=_scale, default=1.0,
                   help=_("PNG pixel multiplier, e.g. 2 for retina; a number in (0, {max}] (default 1)").format(
                       max=f"{MAX_SCALE:g}"))
    p.add_argument("--lang", choices=("en", "zh"), default=language_asked([]),
                   help=_("language of the figure's titles, captions and messages: en or zh (中文); default: "
                          "the system's (LC_ALL, LC_MESSAGES, LANG), else en"))
    return p
