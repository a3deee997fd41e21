"""Figures and data out of the explorer, from the command line: PNG, SVG, HTML, CSV, JSON.

Uses the app's own figure builders (:func:`transformer_core.figures.stage.stage_figure` with the
colour range shared by every head, :func:`~transformer_core.figures.stage.stage_range`), so a
saved image matches the screen. Examples::

    attention-export --text "the cat sat on the mat" --stage weights --head 3 --causal
    attention-export --text "the cat sat" --text "a dog ran" --batch 1 --out slides/dog.svg
    attention-export --text "the cat saw the cat" --stage masked_scores --format csv
    attention-export --model minilm --text "the bank of the river" --layer 5 --head 7
    attention-export --text "the cat sat" --format json --out trace.json
    attention-export --model causal --text "5 17 3 9 5 17 3 9" --layer 1 --head 1

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
import errno
import logging
import os
import stat
import sys
import tempfile
from pathlib import Path

from ..figures import stage as figures
from ..records import serialize
from ..records.trace import Trace
from ..text.i18n import N_, _, set_language, use_language
from .args import (EXTENSIONS, FORMATS, LIMITS, SLIDE_HEIGHT, SLIDE_WIDTH, STAGES, STDOUT, ExportError,  # noqa: F401
                   UsageError, build_parser, check_image_size, language_asked, resolve_output, split_text)
from . import moves, writes
from .fonts import figure_texts, missing_characters, missing_font_message
from .images import PNG_SIGNATURE, check_draws_pixels, check_image  # noqa: F401 (tests reach them here)
from .slides import (build_figure, find_chromium, head_figures, image_server, no_chromium_message,  # noqa: F401
                     render_image, stage_title)
from .traces import build_trace, check_selection, check_work, describe, run_minilm_trace  # noqa: F401


_NOT_REGULAR = ((stat.S_ISFIFO, N_("a named pipe")), (stat.S_ISCHR, N_("a character device")),
                (stat.S_ISBLK, N_("a block device")), (stat.S_ISSOCK, N_("a socket")))


# Raw OS errors in the language of the message (strerror is the C library's English): the common ones.
_OS_REASONS = {  # msgids are glibc's own words, so English output is what strerror says
    errno.ENOSPC: N_("No space left on device"),
    errno.EDQUOT: N_("Disk quota exceeded"),
    errno.EACCES: N_("Permission denied"),
    errno.EPERM: N_("Operation not permitted"),
    errno.EROFS: N_("Read-only file system"),
    errno.ENOENT: N_("No such file or directory"),
    errno.ENOTDIR: N_("Not a directory"),
    errno.EISDIR: N_("Is a directory"),
    errno.ENAMETOOLONG: N_("File name too long"),
    errno.EFBIG: N_("File too large"),
    errno.EIO: N_("Input/output error"),
    errno.EPIPE: N_("Broken pipe"),
    errno.EBADF: N_("Bad file descriptor"),
    errno.EMFILE: N_("Too many open files"),
}


def os_reason(err: OSError) -> str:
    """Why ``err`` happened, in the current language (:data:`_OS_REASONS`; else the system's own words)."""
    if err.errno in _OS_REASONS:
        return _(_OS_REASONS[err.errno])
    return err.strerror or str(err)


def _stdout_closed() -> bool:
    return sys.stdout is None or getattr(sys.stdout, "closed", False)


def check_writable(path: Path) -> None:
    """Fail before rendering if ``path`` cannot be written: only a new or existing regular file will do.

    Checked with ``os.stat`` and never by opening, so a named pipe (FIFO) with no reader cannot block
    the command; a symbolic link is judged by what it points to. ``Path("-")`` (standard output) passes.

    Raises:
        OSError: missing folder, not a folder, a folder or another non-regular file (FIFO, device,
            socket), or no permission.
    """
    if str(path) == STDOUT:
        if _stdout_closed():  # `>&-`: Python then has no sys.stdout at all
            raise OSError(_("cannot write to standard output: it is closed"))
        return
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise OSError(_("cannot write {path}: folder {folder!r} does not exist").format(path=path, folder=str(parent)))
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise OSError(_("cannot write {path}: it is a folder").format(path=path))
    if mode is not None and not stat.S_ISREG(mode):
        kind = next((name for test, name in _NOT_REGULAR if test(mode)), N_("a special file"))
        raise OSError(_("cannot write {path}: it is not a regular file ({kind})").format(path=path, kind=_(kind)))
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise OSError(_("cannot write {path}: permission denied").format(path=path))


STDOUT_CHUNK = 64 * 1024  # written and flushed a piece at a time, so a reader that stops early is noticed


def _to_stdout(text: str) -> None:
    """Write ``text`` to standard output (UTF-8), all of it or an error.

    A reader that stops early (``| head -c 100``) closes the pipe: the next write fails with ``BrokenPipeError``.
    Written whole in one call, the operating system may take the last piece into the pipe before it sees the reader
    go and report success, so the text goes in pieces of :data:`STDOUT_CHUNK` bytes, each flushed. The error is one
    line and exit 1, like any output that could not be written (a shell's ``141`` is a process killed by SIGPIPE,
    which Python ignores); standard output is then pointed at ``/dev/null``, so Python's own flush at exit does not
    print a second error.

    Raises:
        OSError: standard output was closed before the end, or cannot be written.
    """
    data = text.encode("utf-8")
    out = getattr(sys.stdout, "buffer", None)
    try:
        if out is None:  # a text stream with no bytes under it (a caller's StringIO)
            sys.stdout.write(text)
            sys.stdout.flush()
            return
        sys.stdout.flush()
        for start in range(0, len(data), STDOUT_CHUNK):
            out.write(data[start:start + STDOUT_CHUNK])
            out.flush()
    except BrokenPipeError:
        _stdout_to_devnull()
        raise OSError(_("standard output was closed before all {n} bytes were written (the reader stopped early, "
                        "e.g. head): the output is cut").format(n=f"{len(data):,}")) from None
    except OSError as err:
        raise OSError(_("cannot write to standard output: {reason}").format(reason=os_reason(err))) from None


def _stdout_to_devnull() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor under it (a caller's stream)
        pass


def write_output(path: Path, data: str | bytes, fmt: str = "") -> None:
    """Write ``data`` to ``path`` whole or not at all, or to standard output for ``Path("-")``.

    The bytes go to a temporary file beside ``path``, which then replaces it in one step (``os.replace``), so
    a failure (a full disk) leaves an existing file as it was. A symbolic link is written through. A CSV file
    (``fmt="csv"``, whatever its extension) starts with a UTF-8 byte-order mark (``serialize.csv_file``);
    standard output gets none. JSON ends with a newline, as a text file does (``cat`` then leaves the shell's
    prompt on a line of its own, and ``wc -l`` counts its line), file or standard output, whichever view made it.

    Raises:
        OSError: the file cannot be written (the message names it and says why).
    """
    check_image(data, fmt)
    if fmt == "json" and isinstance(data, str) and not data.endswith("\n"):
        data += "\n"
    if str(path) == STDOUT:  # the text formats only (resolve_output)
        if _stdout_closed():
            raise OSError(_("cannot write to standard output: it is closed"))
        _to_stdout(data if isinstance(data, str) else data.decode("utf-8"))
        return
    if isinstance(data, str):
        data = serialize.csv_file(data) if fmt == "csv" else data.encode("utf-8")
    target = Path(os.path.realpath(path))
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(target), suffix=".part", dir=target.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as err:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise OSError(_("cannot write {path}: {reason}").format(path=path, reason=os_reason(err))) from None


TEMP_EXTRA = len(".") + len(".") + 8 + len(".part")  # mkstemp's "." + name + "." + 8 random letters + ".part"


def temp_prefix(target: Path) -> str:
    """``.NAME.`` for the temporary file beside ``target``, NAME cut (on a character boundary) so that the whole
    temporary name fits the file system's NAME_MAX (255 bytes on ext4/tmpfs): a legal 250-byte name was refused
    because its ``.NAME.XXXXXXXX.part`` was 265 bytes."""
    try:
        name_max = os.pathconf(target.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    room = max(1, name_max - TEMP_EXTRA)
    return "." + os.fsencode(target.name)[:room].decode("utf-8", "ignore") + "."  # "ignore": a character cut in two


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def export(trace: Trace, *, stage: str = "weights", batch: int = 0, layer: int = 0, head: int | None = None,
           fmt: str = "png", out: Path | str | None = None, width: int = SLIDE_WIDTH, height: int = SLIDE_HEIGHT,
           scale: float = 1.0) -> Path:
    """Write one export of ``trace`` and return its path (default name from ``figures.figure_filename``).

    Raises:
        UsageError: bad selection or size. OSError: cannot write. ExportError: no Chromium for png/svg.
    """
    if stage not in STAGES:
        raise UsageError(_("unknown stage {stage!r}: choose one of {choices}").format(stage=stage,
                                                                                   choices=", ".join(STAGES)))
    if fmt not in FORMATS:
        raise UsageError(_("unknown format {fmt!r}: choose one of {choices}").format(fmt=fmt,
                                                                                  choices=", ".join(FORMATS)))
    check_image_size(width, height, scale)
    if fmt in ("png", "svg"):
        check_draws_pixels(width, height, scale)
    check_selection(trace, stage, batch, layer, head)
    tokens = trace.tokens[batch][: trace.lengths[batch]]
    if fmt == "json":
        name = figures.figure_filename("trace", None, None, tokens, "json")
    else:
        name = figures.figure_filename(stage, head, layer, tokens, fmt)
    path = Path(out) if out is not None else Path(name)
    if str(path) != STDOUT and path.is_dir():
        path = path / name
    check_writable(path)
    if fmt == "json":
        data: str | bytes = serialize.trace_to_json(trace)
    elif fmt == "csv":
        data = serialize.matrix_to_csv(trace, stage, batch, head, layer)
    elif fmt == "html":  # one slide per head, each titled with its stage, layer and head above its figure
        figs = head_figures(trace, stage, batch=batch, layer=layer, heads=None if head is None else [head])
        data = serialize.figures_to_html(figs, stage_title(stage, layer, head), description=describe(trace, batch),
                                         config=figures.chart_config(path.stem))
    else:
        fig = build_figure(trace, stage, batch=batch, layer=layer, head=head, width=width, height=height)
        if missing := missing_characters(figure_texts(fig)):  # once per image, before Chromium draws boxes
            print(_("export: warning: {message}").format(message=missing_font_message(missing, fmt)), file=sys.stderr)
        data = render_image(fig, fmt, width=width, height=height, scale=scale)
    write_output(path, data, fmt)
    return path


def run(args: argparse.Namespace) -> Path:
    """Do what parsed arguments ask; return the written path."""
    if args.verify:  # a parity report on standard output instead of a file (cli/verify.py); --text optional
        from . import verify

        verify.report(args, split_text(args.text) if args.text else [])
        return Path(STDOUT)
    sentences = split_text(args.text)  # fail on empty text, a bad --out or an unwritable file before running the model
    path, fmt = resolve_output(args.out, args.format)
    if path is not None and (str(path) == STDOUT or not path.is_dir()):
        check_writable(path)
    check_image_size(args.width, args.height, args.scale)
    if fmt in ("png", "svg"):
        check_draws_pixels(args.width, args.height, args.scale)
    check_work(args, sentences, fmt)
    if args.view in writes.VIEWS:  # what the heads write: SmolLM2's run with its residual stream (cli/writes.py)
        name, data = writes.view_output(args, sentences, fmt)
        path = path / name if path is not None and str(path) != STDOUT and path.is_dir() else path or Path(name)
        check_writable(path)
        write_output(path, data, fmt)
        return path
    trace = build_trace(args)
    if args.view:  # one sentence across every layer (cli/moves.py)
        if ignored := [flag for flag, given in (("--stage", args.stage != "weights"), ("--layer", args.layer != 0),
                                                ("--head", args.head is not None)) if given]:
            print(_("export: warning: --view {view} combines every layer and head; ignored: {flags}").format(
                view=args.view, flags=", ".join(ignored)), file=sys.stderr)
        name, data = moves.view_output(trace, args.view, batch=args.batch, fmt=fmt, width=args.width,
                                       height=args.height, scale=args.scale)
        path = path / name if path is not None and str(path) != STDOUT and path.is_dir() else path or Path(name)
        check_writable(path)
        write_output(path, data, fmt)
        return path
    if args.stage == "norms":
        trace = moves.add_norms(trace, args.layer)
    return export(trace, stage=args.stage, batch=args.batch, layer=args.layer, head=args.head, fmt=fmt, out=path,
                  width=args.width, height=args.height, scale=args.scale)


def _message(err: BaseException) -> str:
    if isinstance(err, KeyError) and err.args:
        return str(err.args[0])
    if isinstance(err, OSError) and err.errno is not None:  # a raw one ("[Errno 28] No space left on device")
        where = err.filename if err.filename is not None else ""
        return f"{where}: {os_reason(err)}" if where else os_reason(err)
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code (0 ok, 1 cannot write/render, 2 bad arguments).

    The language it sets (``--lang``, else the system's) is this call's only: the caller's thread gets its
    own back, so calling ``main`` from Python leaves no Chinese behind."""
    argv = sys.argv[1:] if argv is None else list(argv)
    with use_language(language_asked(argv)), _quiet_browser():  # the asked language, from parsing on
        return _run_main(argv)


# Loggers of the Chromium driver: at start-up failures they printed "Wait expired, Browser is being closed by
# watchdog." (in English) before the export's own one-line error, which says what went wrong.
_BROWSER_LOGGERS = ("choreographer", "kaleido", "logistro")


@contextlib.contextmanager
def _quiet_browser():
    loggers = [logging.getLogger(name) for name in _BROWSER_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _run_main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
        set_language(args.lang)  # titles, captions and axis titles of the figure (transformer_core.text.i18n)
        path = run(args)
    except SystemExit as done:  # --help
        return int(done.code or 0)
    except (ValueError, KeyError, IndexError) as err:
        print(_("export: error: {message}").format(message=_message(err)), file=sys.stderr)
        return 2
    except (OSError, ExportError) as err:
        print(_("export: error: {message}").format(message=_message(err)), file=sys.stderr)
        return 1
    if str(path) != STDOUT:  # the data itself went to standard output
        print(path)
    return 0


def main_exit() -> None:
    """Console-script entry (``attention-export``): exit with :func:`main`'s code."""
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
