#!/usr/bin/env python
"""Regenerate the PNG images under ``docs/images/`` from ``docs/examples.json``.

Each example is one call of the export command (``attention-export``);
this script prints that command line, so every image in the docs can be remade by hand::

    python scripts/make_docs_images.py              # all examples
    python scripts/make_docs_images.py --only toy_weights_causal.png
    python scripts/make_docs_images.py --browser    # and the app's screenshots, from the browser tests

``--browser`` also runs the browser tests that take the docs' screenshots of the app (``BROWSER_TESTS``)
with ``ATTENTION_DOCS_IMAGES`` pointing at the output folder; without it those tests write only into their
temporary folders. This script is the one thing that writes ``docs/images/``.

Example fields: ``text`` (a sentence or a list = a batch), ``settings`` (``model``, and for
the toy model ``d_model``, ``n_heads``, ``n_layers``, ``seed``, ``tokenizer``; ``causal``,
``padding``, ``max_tokens``), ``stage``, ``layer``, ``head`` (``null`` = grid of every head),
``batch``, ``out`` (file name in ``docs/images/``), optional ``width``/``height``/``scale``
and a ``caption`` for the docs. One Chromium serves every image (kaleido's sync server).

Exit code 0 when every image was written, 1 otherwise (each failure is one line on stderr).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from transformer_core.cli import export  # noqa: E402

SETTING_FLAGS = ("model", "d_model", "n_heads", "n_layers", "seed", "tokenizer", "causal", "padding", "max_tokens")
OPTION_FLAGS = ("stage", "layer", "head", "batch", "width", "height", "scale")
# The browser tests whose screenshots are docs images (tests/browser_utils.py images_folder):
# moves_*.png, ablation_*.png, predictions_causal.png, slide_all_heads_masked_scores.png, slide_camera.png.
BROWSER_TESTS = ("tests/test_browser_moves.py", "tests/test_browser_ablation.py",
                 "tests/test_slide_layout.py::test_cli_svg_slides",
                 "tests/test_slide_layout.py::test_chart_camera_saves_the_slide_header_and_square_cells")


def browser_screenshots(images: Path) -> int:
    """Run :data:`BROWSER_TESTS` with ``ATTENTION_DOCS_IMAGES=images``; pytest's exit code."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *BROWSER_TESTS]
    print("$ ATTENTION_DOCS_IMAGES=" + shlex.quote(str(images)) + " " + shlex.join(command[1:]), flush=True)
    env = {**os.environ, "ATTENTION_DOCS_IMAGES": str(images.resolve())}
    return subprocess.run(command, cwd=ROOT, env=env).returncode


def example_argv(example: dict, images: Path) -> list[str]:
    """The export command-line arguments for one example.

    Raises:
        ValueError: an unknown setting, or no ``out`` file name.
    """
    settings = dict(example.get("settings") or {})
    unknown = set(settings) - set(SETTING_FLAGS)
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)} (known: {', '.join(SETTING_FLAGS)})")
    if not example.get("out"):
        raise ValueError("example has no 'out' file name")
    texts = example.get("text") or []
    argv: list[str] = []
    for text in [texts] if isinstance(texts, str) else texts:
        argv += ["--text", text]
    for key in SETTING_FLAGS:
        if key not in settings or settings[key] is None:
            continue
        value, flag = settings[key], "--" + key.replace("_", "-")
        if isinstance(value, bool):
            argv.append(flag if value else "--no-" + key.replace("_", "-"))
        else:
            argv += [flag, str(value)]
    for key in OPTION_FLAGS:
        if example.get(key) is not None:
            argv += ["--" + key, str(example[key])]
    return argv + ["--out", str(images / example["out"])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=Path, default=ROOT / "docs" / "examples.json")
    parser.add_argument("--images", type=Path, default=ROOT / "docs" / "images", help="output folder")
    parser.add_argument("--only", nargs="+", metavar="OUT", help="only these output file names")
    parser.add_argument("--browser", action="store_true",
                        help="also the app's screenshots: run the browser tests that take them (BROWSER_TESTS)")
    args = parser.parse_args(argv)

    examples = json.loads(args.examples.read_text(encoding="utf-8"))
    if args.only:
        examples = [e for e in examples if e.get("out") in args.only]
    if export.find_chromium() is None:
        print(f"make_docs_images: error: {export.no_chromium_message('png')}", file=sys.stderr)
        return 1
    args.images.mkdir(parents=True, exist_ok=True)
    failed = []
    with export.image_server():
        for example in examples:
            name = example.get("out", "?")
            try:
                cli = example_argv(example, args.images)
            except ValueError as err:
                print(f"make_docs_images: {name}: {err}", file=sys.stderr)
                failed.append(name)
                continue
            shown = [str(Path(a).relative_to(ROOT)) if a.startswith(str(ROOT)) else a for a in cli]
            print("$ attention-export " + shlex.join(shown))
            start = time.perf_counter()
            code = export.main(cli)
            print(f"  {'ok' if code == 0 else 'FAILED'} in {time.perf_counter() - start:.2f} s")
            if code:
                failed.append(name)
    if args.browser and browser_screenshots(args.images):
        print("make_docs_images: the browser tests that take the screenshots failed", file=sys.stderr)
        failed.append("browser screenshots")
    if failed:
        print(f"make_docs_images: {len(failed)} of {len(examples) + args.browser} failed: {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
