"""Figures and data out of the explorer, from the command line: PNG, SVG, HTML, CSV, JSON.

Uses the app's own figure builders (:func:`transformer_core.figures.stage_figure` with the
colour range shared by every head, :func:`~transformer_core.figures.stage_range`), so a
saved image matches the screen. Examples::

    python -m transformer_core.export --text "the cat sat on the mat" --stage weights --head 3 --causal
    python -m transformer_core.export --text "the cat sat" --text "a dog ran" --batch 1 --out slides/dog.svg
    python -m transformer_core.export --text "the cat saw the cat" --stage masked_scores --format csv
    python -m transformer_core.export --model minilm --text "the bank of the river" --layer 5 --head 7
    python -m transformer_core.export --text "the cat sat" --format json --out trace.json
    python -m transformer_core.export --model causal --text "5 17 3 9 5 17 3 9" --layer 1 --head 1

``--head`` omitted means every head: a grid of heads in one PNG/SVG, one figure per head in
HTML, heads stacked in CSV. JSON always holds the whole trace (every stage, every head).
PNG/SVG need Chromium (Debian ``chromium``, found on ``PATH`` or via ``BROWSER_PATH``);
HTML, CSV and JSON do not.

Exit codes: 0 written; 1 could not write or render (no Chromium, unwritable path, MiniLM or
its WordPiece tokenizer missing); 2 bad arguments, including sizes beyond :data:`LIMITS` and
work beyond :data:`MAX_NUMBERS` (both checked before the model runs). Errors are one line on
stderr, never a traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import html
import math
import os
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import plotly.graph_objects as go

from . import figures, serialize
from .config import EncoderConfig
from .tokenize import normalize_text
from .trace import Trace, run_toy

PROG = "python -m transformer_core.export"
STAGES = ("q", "k", "v", "scores", "masked_scores", "weights", "context")
FORMATS = ("png", "svg", "html", "csv", "json")
EXTENSIONS = {".png": "png", ".svg": "svg", ".html": "html", ".htm": "html", ".csv": "csv", ".json": "json"}
IMAGE_FORMATS = ("png", "svg")
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


# ---------------------------------------------------------------- traces

def run_minilm_trace(sentences: list[str], *, padding: bool = True, max_tokens: int = MINILM_MAX_TOKENS) -> Trace:
    """MiniLM-L6 trace via ``transformer_core.pretrained_trace.run_minilm`` (imported only when asked for).

    Raises:
        ExportError: the module or the MiniLM weights are not available.
    """
    try:
        from .pretrained_trace import run_minilm
    except ImportError as err:
        raise ExportError(f"MiniLM export is unavailable: cannot import transformer_core.pretrained_trace.run_minilm "
                          f"({err}); use --model toy") from None
    try:
        return run_minilm(sentences, padding=padding, max_tokens=max_tokens)
    except RuntimeError as err:  # pretrained.PretrainedUnavailable and friends
        raise ExportError(f"MiniLM export failed: {err}") from None


def wordpiece_lengths(sentences: list[str]) -> list[int]:
    """WordPiece tokens of each sentence, ``[CLS]`` and ``[SEP]`` included.

    Raises:
        ExportError: MiniLM's tokenizer is missing or corrupt (the message says so and what to do).
    """
    from .tokenize import wordpiece_tokenize

    try:
        return [len(wordpiece_tokenize(s)) for s in sentences]
    except Exception as err:  # noqa: BLE001 PretrainedUnavailable, or tokenizers' bare Exception for a corrupt file
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ExportError(f"the BERT WordPiece tokenizer is not available (it comes with the trained model "
                          f"MiniLM-L6): {detail}; use --tokenizer word") from None


def check_image_size(width: int, height: int, scale: float) -> None:
    """Raises UsageError unless width and height are positive, scale is in (0, MAX_SCALE] and no
    side exceeds MAX_PIXELS after scaling (NaN and inf are refused too)."""
    if width <= 0 or height <= 0 or not 0 < scale <= MAX_SCALE:
        raise UsageError(f"--width and --height must be positive and --scale in (0, {MAX_SCALE:g}], "
                         f"got {width}×{height} × {scale}")
    if max(width, height) * scale > MAX_PIXELS:
        raise UsageError(f"the image would be {width * scale:.0f}×{height * scale:.0f} px; "
                         f"at most {MAX_PIXELS} px a side")


def check_work(args: argparse.Namespace, sentences: list[str], fmt: str = "png") -> None:
    """Refuse a run that would capture more than :data:`MAX_NUMBERS` numbers (:data:`MAX_JSON_NUMBERS`
    for JSON), before it starts.

    Raises:
        UsageError: too many sentences or numbers (the message names the sizes to lower).
        ExportError: ``wordpiece`` asked for and unavailable.
    """
    if len(sentences) > MAX_SENTENCES:
        raise UsageError(f"{len(sentences)} sentences; at most {MAX_SENTENCES} per export")
    if args.model == "causal":
        n_layers, n_heads, d_model = 2, 4, 64
        counts = [len(" ".join(sentences).replace(",", " ").split())]
    elif args.model == "minilm":
        n_layers, n_heads, d_model, cap = 6, 12, 384, args.max_tokens or MINILM_MAX_TOKENS
        if cap < 2:
            raise UsageError("--max-tokens must be at least 2 for MiniLM ([CLS] and [SEP])")
        counts = [min(n, cap) for n in wordpiece_lengths(sentences)]
    else:
        opt = {k: (getattr(args, k) if getattr(args, k) is not None else v) for k, v in TOY_DEFAULTS.items()}
        n_layers, n_heads, d_model, cap = opt["n_layers"], opt["n_heads"], opt["d_model"], opt["max_tokens"]
        if opt["tokenizer"] == "wordpiece":
            counts = [min(n, cap) for n in wordpiece_lengths(sentences)]
        else:
            from .tokenize import word_tokenize

            counts = [min(len(word_tokenize(s)), cap) for s in sentences]
    n, b = max(counts, default=0), len(sentences)
    numbers = n_layers * b * (3 * n_heads * n * n + 12 * n * d_model) + b * n * d_model
    limit = MAX_JSON_NUMBERS if fmt == "json" else MAX_NUMBERS
    if numbers > limit:
        raise UsageError(f"this run would capture {numbers:,} numbers ({b} sentence{'s' * (b != 1)} × {n} tokens, "
                         f"{n_layers} layer{'s' * (n_layers != 1)}, {n_heads} heads, d_model {d_model}); at most "
                         f"{limit:,}{' for JSON' if fmt == 'json' else ''}: use fewer or shorter sentences, a lower "
                         "--max-tokens, fewer layers or heads, or a smaller --d-model")


def build_trace(args: argparse.Namespace) -> Trace:
    """The trace the arguments describe (toy encoder or MiniLM).

    Raises:
        ValueError: bad sizes, no text, toy-only options given for MiniLM.
    """
    sentences = split_text(args.text)
    if args.model == "causal":
        return run_causal_trace(args, sentences)
    if args.step is not None:
        raise UsageError("--step applies only to --model causal (a training checkpoint)")
    if args.model == "minilm":
        given = [f"--{k.replace('_', '-')}" for k in ("d_model", "n_heads", "n_layers", "seed", "tokenizer")
                 if getattr(args, k) is not None]
        if args.causal:
            given.append("--causal")
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise UsageError(f"{', '.join(given)} {verb} only to --model toy (MiniLM-L6 is a fixed, "
                             "bidirectional 6-layer × 12-head model)")
        return run_minilm_trace(sentences, padding=args.padding, max_tokens=args.max_tokens or MINILM_MAX_TOKENS)
    opt = {k: (getattr(args, k) if getattr(args, k) is not None else v) for k, v in TOY_DEFAULTS.items()}
    config = EncoderConfig(d_model=opt["d_model"], n_heads=opt["n_heads"], n_layers=opt["n_layers"],
                           d_ff=4 * opt["d_model"], seed=opt["seed"])
    return run_toy(sentences, config, tokenizer=opt["tokenizer"], causal=bool(args.causal), padding=args.padding,
                   max_tokens=opt["max_tokens"])


def run_causal_trace(args: argparse.Namespace, sentences: list[str]) -> Trace:
    """The trained causal model (:mod:`transformer_core.causal`) on one sequence of token ids
    (``--text "5 17 3 5 17 3"``), checkpoint ``--step`` (default final), causal mask on unless ``--no-causal``.

    Raises:
        UsageError: toy/MiniLM-only options, ids that are not 0…63, more than 48 tokens, an unknown step.
        ExportError: the committed weights are missing or corrupt.
    """
    from .causal import CAUSAL_CONFIG, CausalUnavailable, checkpoint_steps, parse_tokens, run_causal

    given = [f"--{k.replace('_', '-')}" for k in ("d_model", "n_heads", "n_layers", "seed", "tokenizer", "max_tokens")
             if getattr(args, k) is not None]
    if given:
        raise UsageError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} only to --model toy or "
                         "minilm (the causal model is a fixed 2-layer × 4-head model)")
    try:
        ids = parse_tokens(" ".join(sentences))
    except ValueError as err:
        raise UsageError(str(err)) from err
    if len(ids) > CAUSAL_CONFIG.max_positions:
        raise UsageError(f"{len(ids)} tokens; the causal model takes at most {CAUSAL_CONFIG.max_positions}")
    try:
        steps = checkpoint_steps()
        if args.step is not None and args.step not in steps:
            raise UsageError(f"no checkpoint at step {args.step}; choose one of {', '.join(map(str, steps))}")
        return run_causal(ids, step=args.step, causal=args.causal is not False)
    except (CausalUnavailable, OSError) as err:
        raise ExportError(f"causal model export is unavailable: {err}") from err


def split_text(texts: list[str] | None) -> list[str]:
    """``--text`` values → sentences: each value may hold several lines; blank lines are dropped.

    Each value goes through :func:`~transformer_core.tokenize.normalize_text` first, as in the
    app: NFC, control characters as control pictures (``"\\x00"`` → ``"␀"``; so every SVG is
    well-formed XML); then line breaks (LF, CR, U+2028, U+2029) split the sentences.

    Raises:
        UsageError: nothing but white space.
    """
    sentences = [line.strip() for text in (texts or []) for line in normalize_text(text).splitlines()]
    sentences = [s for s in sentences if s]
    if not sentences:
        raise UsageError("empty text: pass at least one sentence, e.g. --text \"the cat sat on the mat\"")
    return sentences


# ---------------------------------------------------------------- figures

def describe(trace: Trace, batch: int) -> str:
    """Plain-text one-liner of what produced the figure: model, mask, sentence."""
    s = trace.settings
    if s.get("model") == "toy":
        model = f"toy encoder (random weights, seed {s.get('seed')}), d_model={s.get('d_model')}, {s.get('n_heads')} heads"
    else:
        model = str(s.get("name") or s.get("model") or "model")
        if model == "minilm":
            model = "MiniLM-L6 (all-MiniLM-L6-v2)"
        elif model == "causal":
            model = f"trained causal model (step {s.get('step') if s.get('step') is not None else 'final'})"
    masks = [m for m in ("causal", "padding") if s.get(m)]
    mask = " + ".join(masks) + " mask" if masks else "no mask"
    words = " ".join(trace.tokens[batch][: trace.lengths[batch]])
    if len(words) > 90:
        words = words[:89] + "…"
    return f"{model} · {mask} · sentence {batch}: “{words}”"


def check_selection(trace: Trace, stage: str, batch: int, layer: int, head: int | None) -> None:
    """Range checks with messages that say what exists.

    Raises:
        UsageError: batch, layer or head out of range.
    """
    n_batch = len(trace.tokens)
    if not 0 <= batch < n_batch:
        raise UsageError(f"--batch {batch} out of range: the text has {n_batch} sentence(s), so 0..{n_batch - 1}")
    n_layers = trace.n_layers
    if not 0 <= layer < n_layers:
        hint = " (raise --n-layers for a deeper toy model)" if trace.settings.get("model") == "toy" else ""
        raise UsageError(f"--layer {layer} out of range: the model has layers 0..{n_layers - 1}{hint}")
    n_heads = trace.stage(stage, layer).shape[1]
    if head is not None and not 0 <= head < n_heads:
        raise UsageError(f"--head {head} out of range: the model has heads 0..{n_heads - 1}")


def head_figures(trace: Trace, stage: str, *, batch: int = 0, layer: int = 0,
                 heads: list[int] | None = None) -> list[go.Figure]:
    """``figures.stage_figure`` for each head, all with the stage's shared colour range (as in the app)."""
    zrange = figures.stage_range(trace, stage, batch, layer)
    heads = list(range(trace.stage(stage, layer).shape[1])) if heads is None else heads
    return [figures.stage_figure(trace, stage, batch=batch, head=h, layer=layer, zrange=zrange) for h in heads]


def stage_title(stage: str, layer: int, head: int | None) -> str:
    which = "all heads" if head is None else f"head {head}"
    return f"{figures.STAGE_TITLES.get(stage, stage)} — layer {layer}, {which}"


def slide_figure(fig: go.Figure, title: str, subtitle: str) -> go.Figure:
    """Give a figure a slide title and a subtitle (plain text; escaped here)."""
    if fig.layout.height:  # on screen (HTML) keep the plot area the builder chose; files get --width/--height
        fig.update_layout(height=fig.layout.height + 90)
    fig.update_layout(
        # yref="container": the app's figures put their caption under the plot (yref="paper", y=0)
        title=dict(text=html.escape(title), font=dict(size=18), x=0.01, xanchor="left", y=0.98, yanchor="top",
                   yref="container", automargin=False, pad=dict(t=0, b=0),
                   subtitle=dict(text=html.escape(subtitle), font=dict(size=12, color="#555"))),
        margin=dict(t=130, l=10, r=10, b=20),
    )
    # The template's white zero lines cut through row 0 / column 0 of a heatmap (showgrid=False keeps them).
    fig.update_xaxes(zeroline=False)
    fig.update_yaxes(zeroline=False)
    return fig


def grid_shape(n: int, aspect: float) -> tuple[int, int]:
    """(rows, cols) for ``n`` square-ish panels on a canvas ``aspect`` = width / height."""
    cols = max(1, min(n, math.ceil(math.sqrt(n * aspect))))
    rows = math.ceil(n / cols)
    return rows, math.ceil(n / rows)


def head_grid(figs: list[go.Figure], *, aspect: float = SLIDE_WIDTH / SLIDE_HEIGHT) -> go.Figure:
    """Several ``stage_figure`` outputs as one grid (for one image of every head).

    Traces are copied unchanged; keys label the top row, queries the left column, one colour
    bar (the range is shared), and each panel is named under its plot.
    """
    from plotly.subplots import make_subplots

    rows, cols = grid_shape(len(figs), aspect)
    grid = make_subplots(rows=rows, cols=cols, horizontal_spacing=0.02, vertical_spacing=0.06 + 0.02 * (rows > 2))
    first = figs[0].layout
    n_ticks = len(first.yaxis.tickvals or ())
    tick_font = dict(size=11 if n_ticks <= 8 else 9 if n_ticks <= 16 else 7)
    for i, fig in enumerate(figs):
        r, c = divmod(i, cols)
        for j, trace in enumerate(fig.data):
            trace = go.Figure(trace).data[0]  # a copy
            if j == 0:  # the values; later heatmaps are the one-colour "masked" overlays
                trace.update(showscale=(i == 0), colorbar=dict(thickness=14, len=0.9))
            grid.add_trace(trace, row=r + 1, col=c + 1)
        xa, ya = fig.layout.xaxis, fig.layout.yaxis
        grid.update_xaxes(tickmode="array", tickvals=xa.tickvals, ticktext=xa.ticktext if r == 0 else None,
                          showticklabels=(r == 0), side="top", tickangle=xa.tickangle, showgrid=False,
                          zeroline=False, tickfont=tick_font, row=r + 1, col=c + 1)
        grid.update_yaxes(tickmode="array", tickvals=ya.tickvals, ticktext=ya.ticktext if c == 0 else None,
                          showticklabels=(c == 0), autorange="reversed", showgrid=False, zeroline=False,
                          tickfont=tick_font, row=r + 1, col=c + 1)
        xref = grid.get_subplot(r + 1, c + 1).xaxis.plotly_name.replace("axis", "")
        domain_x = grid.layout[f"xaxis{'' if xref == 'x' else xref[1:]}"].domain
        domain_y = grid.get_subplot(r + 1, c + 1).yaxis.domain
        grid.add_annotation(text=fig.layout.title.text or f"panel {i}", showarrow=False, xref="paper", yref="paper",
                            x=(domain_x[0] + domain_x[1]) / 2, y=domain_y[0], yanchor="top", font=dict(size=12))
    grid.update_layout(plot_bgcolor=first.plot_bgcolor, meta={**dict(first.meta or {}), "head": None},
                       showlegend=False)
    return grid


def build_figure(trace: Trace, stage: str, *, batch: int, layer: int, head: int | None) -> go.Figure:
    """The slide figure: one head, or a grid of every head, titled with what produced it."""
    if head is None:
        fig = head_grid(head_figures(trace, stage, batch=batch, layer=layer))
    else:
        fig = head_figures(trace, stage, batch=batch, layer=layer, heads=[head])[0]
    return slide_figure(fig, stage_title(stage, layer, head), describe(trace, batch))


# ---------------------------------------------------------------- images

def find_chromium() -> str | None:
    """The Chromium kaleido will use: ``BROWSER_PATH`` if set, else the first one on ``PATH``."""
    env = os.environ.get("BROWSER_PATH")
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    for name in CHROMIUM_NAMES:
        if found := shutil.which(name):
            return found
    try:  # choreographer also knows typical install folders and its own downloaded copy
        from choreographer.browsers.chromium import Chromium

        return Chromium.find_browser(skip_local=False)
    except Exception:  # noqa: BLE001 best effort: any failure means "not found"
        return None


def no_chromium_message(fmt: str) -> str:
    where = os.environ.get("BROWSER_PATH")
    found = f"BROWSER_PATH={where!r} is not an executable" if where else "no chromium on PATH"
    return (f"{fmt.upper()} export needs Chromium and {found}: install it (apt install chromium) or set "
            "BROWSER_PATH=/path/to/chromium; --format html, csv and json work without it")


def render_image(fig: go.Figure, fmt: str, *, width: int = SLIDE_WIDTH, height: int = SLIDE_HEIGHT,
                 scale: float = 1.0) -> bytes:
    """PNG or SVG bytes through kaleido and the system Chromium.

    Raises:
        ExportError: no Chromium, or kaleido failed (message has the cause).
    """
    if find_chromium() is None:
        raise ExportError(no_chromium_message(fmt))
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The kopts argument is ignored")  # with image_server()
            return fig.to_image(format=fmt, width=width, height=height, scale=scale)
    except Exception as err:  # noqa: BLE001 kaleido/choreographer raise many types; report one line
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ExportError(f"{fmt.upper()} export failed in kaleido/Chromium: {detail}") from None


@contextlib.contextmanager
def image_server() -> Iterator[None]:
    """Keep one Chromium running for every image rendered in the block (first image ~3 s, then ~0.3 s each)."""
    import kaleido

    kaleido.start_sync_server(silence_warnings=True)
    try:
        yield
    finally:
        kaleido.stop_sync_server(silence_warnings=True)


# ---------------------------------------------------------------- files

def resolve_output(out: str | None, fmt: str | None) -> tuple[Path | None, str]:
    """(path or ``None`` for the default name, format) from ``--out`` and ``--format``.

    A folder ``--out`` keeps the default file name inside it.

    Raises:
        UsageError: format cannot be inferred, or contradicts the extension.
        OSError: ``--out`` ends with a slash but is not an existing folder.
    """
    if out is None:
        return None, fmt or "png"
    path = Path(out)
    if path.is_dir():
        return path, fmt or "png"
    if out.endswith(("/", os.sep)):
        raise OSError(f"cannot write into {out!r}: no such folder")
    inferred = EXTENSIONS.get(path.suffix.lower())
    if fmt and inferred and fmt != inferred:
        raise UsageError(f"--format {fmt} contradicts the extension of --out {out!r}")
    if fmt is None and inferred is None:
        raise UsageError(f"cannot tell the format from --out {out!r}: use an extension "
                         f"({', '.join(sorted(EXTENSIONS))}) or pass --format")
    return path, fmt or inferred


def check_writable(path: Path) -> None:
    """Fail before rendering if ``path`` cannot be written.

    Raises:
        OSError: missing folder, not a folder, or no permission.
    """
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise OSError(f"cannot write {path}: folder {str(parent)!r} does not exist")
    if path.is_dir():
        raise OSError(f"cannot write {path}: it is a folder")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise OSError(f"cannot write {path}: permission denied")


def write_output(path: Path, data: str | bytes) -> None:
    try:
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")
    except OSError as err:
        raise OSError(f"cannot write {path}: {err.strerror or err}") from None


def export(trace: Trace, *, stage: str = "weights", batch: int = 0, layer: int = 0, head: int | None = None,
           fmt: str = "png", out: Path | str | None = None, width: int = SLIDE_WIDTH, height: int = SLIDE_HEIGHT,
           scale: float = 1.0) -> Path:
    """Write one export of ``trace`` and return its path (default name from ``figures.figure_filename``).

    Raises:
        UsageError: bad selection or size. OSError: cannot write. ExportError: no Chromium for png/svg.
    """
    if stage not in STAGES:
        raise UsageError(f"unknown stage {stage!r}: choose one of {', '.join(STAGES)}")
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    check_image_size(width, height, scale)
    check_selection(trace, stage, batch, layer, head)
    tokens = trace.tokens[batch][: trace.lengths[batch]]
    if fmt == "json":
        name = figures.figure_filename("trace", None, None, tokens, "json")
    else:
        name = figures.figure_filename(stage, head, layer, tokens, fmt)
    path = Path(out) if out is not None else Path(name)
    if path.is_dir():
        path = path / name
    check_writable(path)
    if fmt == "json":
        data: str | bytes = serialize.trace_to_json(trace)
    elif fmt == "csv":
        data = serialize.matrix_to_csv(trace, stage, batch, head, layer)
    elif fmt == "html":
        if head is None:
            figs = head_figures(trace, stage, batch=batch, layer=layer)
        else:
            figs = [build_figure(trace, stage, batch=batch, layer=layer, head=head)]
        data = serialize.figures_to_html(figs, stage_title(stage, layer, head), description=describe(trace, batch),
                                         config=figures.chart_config(path.stem))
    else:
        fig = build_figure(trace, stage, batch=batch, layer=layer, head=head)
        data = render_image(fig, fmt, width=width, height=height, scale=scale)
    write_output(path, data)
    return path


# ---------------------------------------------------------------- command line

def _bounded(name: str) -> Callable[[str], int]:
    """argparse ``type`` for a whole number within ``LIMITS[name]`` (the message states the range)."""
    low, high = LIMITS[name]

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}..{high:,}")
        return value

    return parse


def _scale(text: str) -> float:
    """argparse ``type`` for ``--scale``: a finite number in (0, MAX_SCALE]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not 0 < value <= MAX_SCALE:  # NaN and inf fail here too
        raise argparse.ArgumentTypeError(f"{text} is not a number in (0, {MAX_SCALE:g}]")
    return value


def _range(name: str) -> str:
    low, high = LIMITS[name]
    return f"{low}–{high:,}"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage dump; main() prints it
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Export an attention figure or the captured data for docs and slides.",
                epilog="Examples:\n  " + "\n  ".join([
                    f'{PROG} --text "the cat sat on the mat" --stage weights --head 3 --causal',
                    f'{PROG} --text "the cat saw the cat" --stage masked_scores --causal --format csv',
                    f'{PROG} --model minilm --text "the bank of the river" --layer 5 --out bank.svg',
                ]) + "\n\nLimits, checked before the model runs (exit 2 beyond them):\n  "
                + "\n  ".join([
                    f"d_model {_range('d_model')}, n_heads {_range('n_heads')}, n_layers {_range('n_layers')}, "
                    f"seed {_range('seed')}, max_tokens {_range('max_tokens')}, at most {MAX_SENTENCES} sentences",
                    f"at most {MAX_NUMBERS:,} captured numbers (~{MAX_NUMBERS * 4 // 10**6} MB; "
                    f"{MAX_JSON_NUMBERS:,} for --format json): "
                    "layers × sentences × (3 × heads × tokens² + 12 × tokens × d_model)",
                    f"images {_range('width')} px a side, --scale up to {MAX_SCALE:g}, "
                    f"at most {MAX_PIXELS} px a side after scaling"]),
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--text", action="append", metavar="TEXT",
                   help="a sentence; repeat it, or put one sentence per line, to make a batch")
    p.add_argument("--model", choices=("toy", "minilm", "causal"), default="toy",
                   help="toy random-weight encoder, MiniLM-L6, or the trained causal model (--text = token ids 0-63)")
    p.add_argument("--step", type=int, help="causal: training checkpoint (default: the final model)")
    p.add_argument("--d-model", type=_bounded("d_model"),
                   help=f"toy: width of every token vector, {_range('d_model')} (default 64)")
    p.add_argument("--n-heads", type=_bounded("n_heads"),
                   help=f"toy: attention heads, {_range('n_heads')}, must divide --d-model (default 8)")
    p.add_argument("--n-layers", type=_bounded("n_layers"),
                   help=f"toy: encoder layers, {_range('n_layers')} (default 1)")
    p.add_argument("--seed", type=_bounded("seed"),
                   help=f"toy: seed of the random weights and embeddings, {_range('seed')} (default 0)")
    p.add_argument("--tokenizer", choices=("word", "wordpiece"), help="toy: tokenizer (default word)")
    p.add_argument("--causal", action=argparse.BooleanOptionalAction, default=None,
                   help="toy: causal mask, each position sees only itself and earlier ones (default off); "
                        "causal model: on by default, --no-causal shows what breaks")
    p.add_argument("--padding", action=argparse.BooleanOptionalAction, default=True,
                   help="padding mask, so no one attends to [PAD] (default on)")
    p.add_argument("--max-tokens", type=_bounded("max_tokens"),
                   help=f"cut each sentence to this many tokens, {_range('max_tokens')} (default: toy 64, MiniLM 128)")
    p.add_argument("--layer", type=int, default=0, help="encoder layer (default 0)")
    p.add_argument("--head", type=int, help="attention head (default: all heads)")
    p.add_argument("--stage", choices=STAGES, default="weights", help="which matrix (default weights)")
    p.add_argument("--batch", type=int, default=0, help="which sentence of the batch (default 0)")
    p.add_argument("--format", choices=FORMATS, help="output format (default: from --out's extension, else png)")
    p.add_argument("--out", metavar="PATH", help="output file or folder (default: a name like weights_L0_H3_the-cat-sat.png)")
    p.add_argument("--width", type=_bounded("width"), default=SLIDE_WIDTH,
                   help=f"image width in px, {_range('width')} (default {SLIDE_WIDTH})")
    p.add_argument("--height", type=_bounded("height"), default=SLIDE_HEIGHT,
                   help=f"image height in px, {_range('height')} (default {SLIDE_HEIGHT})")
    p.add_argument("--scale", type=_scale, default=1.0,
                   help=f"PNG pixel multiplier, e.g. 2 for retina; a number in (0, {MAX_SCALE:g}] (default 1)")
    return p


def run(args: argparse.Namespace) -> Path:
    """Do what parsed arguments ask; return the written path."""
    sentences = split_text(args.text)  # fail on empty text, a bad --out or an unwritable file before running the model
    path, fmt = resolve_output(args.out, args.format)
    if path is not None and not path.is_dir():
        check_writable(path)
    check_image_size(args.width, args.height, args.scale)
    check_work(args, sentences, fmt)
    trace = build_trace(args)
    return export(trace, stage=args.stage, batch=args.batch, layer=args.layer, head=args.head, fmt=fmt, out=path,
                  width=args.width, height=args.height, scale=args.scale)


def _message(err: BaseException) -> str:
    if isinstance(err, KeyError) and err.args:
        return str(err.args[0])
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code (0 ok, 1 cannot write/render, 2 bad arguments)."""
    try:
        args = build_parser().parse_args(argv)
        path = run(args)
    except SystemExit as done:  # --help
        return int(done.code or 0)
    except (ValueError, KeyError, IndexError) as err:
        print(f"export: error: {_message(err)}", file=sys.stderr)
        return 2
    except (OSError, ExportError) as err:
        print(f"export: error: {_message(err)}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
