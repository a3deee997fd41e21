#!/usr/bin/env python3
"""Streamlit's static files, compressed once, for nginx to serve from disk (gzip_static / brotli_static).

    python deploy/precompress_static.py /srv/streamlit-static     # compose's `static` service does this

Streamlit 1.67 sends its JavaScript uncompressed (a first visit is 9.0 MB, Plotly's chunk alone
4.7 MB). Compressing on the fly in nginx costs ~0.35 s of CPU (gzip 5) or ~0.76 s (brotli 6) per
visitor for Plotly's chunk alone, 10–25 s of one nginx worker when a class of 30 opens the link at
once. Compressed once, at the strongest settings, every visitor is served from disk:
Plotly's chunk is 1.36 MB as gzip (zopfli) and 1.06 MB as brotli (quality 11).

Our chart element's plotly.js (``static/plotly/`` of this checkout, fetched at install by scripts/fetch_plotly.py) is
copied beside it as ``<dest>/app/static/plotly/…``, answering ``/app/static/plotly/…`` (1.50 MB → ~0.45 MB gzip).

The copy keeps Streamlit's layout (``<dest>/static/js/…`` answers ``/static/js/…``) and writes
``<file>.gz`` (zopfli for files over 256 kB, else gzip -9) and, when the ``brotli`` package is
installed, ``<file>.br`` beside every compressible file of 1 kB or more. A stamp with Streamlit's
version makes a second run on the same folder free.
"""
from __future__ import annotations

import argparse
import fcntl
import gzip
import os
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

COMPRESSIBLE = {".js", ".css", ".html", ".json", ".svg", ".map", ".txt"}
MIN_BYTES = 1024
BIG = 256_000  # above this, the slow strongest settings (a few seconds a file, once)


PLOTLY = Path(__file__).resolve().parents[1] / "static" / "plotly"  # served by the app at /app/static/plotly/


def streamlit_static() -> tuple[Path, str]:
    """Streamlit's static folder and a stamp naming its version and our pinned plotly.js (SHA256SUMS)."""
    import hashlib

    import streamlit

    sums = PLOTLY / "SHA256SUMS"
    pins = hashlib.sha256(sums.read_bytes()).hexdigest()[:12] if sums.exists() else "none"
    return Path(streamlit.__file__).resolve().parent / "static", f"{streamlit.__version__} plotly {pins}"


def _compress(path: str) -> None:
    data = Path(path).read_bytes()
    big = len(data) > BIG
    try:
        import zopfli.gzip

        gz = zopfli.gzip.compress(data, numiterations=5) if big else gzip.compress(data, 9, mtime=0)
    except ImportError:
        gz = gzip.compress(data, 9, mtime=0)
    Path(path + ".gz").write_bytes(gz)
    try:
        import brotli
    except ImportError:
        return
    Path(path + ".br").write_bytes(brotli.compress(data, quality=11 if big else 9, lgwin=24))


def build(dest: Path, workers: int | None = None) -> Path:
    """Copy Streamlit's static folder to ``dest`` with .gz/.br beside each compressible file; return ``dest``."""
    source, version = streamlit_static()
    dest = Path(dest)
    stamp = dest / ".precompressed"
    if stamp.exists() and stamp.read_text() == version:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    # One builder at a time (test processes under pytest-xdist, two run_local.py): the others wait here, then
    # find the stamp; without the lock one process removed the folder while another's nginx served from it.
    with open(dest.parent / f".{dest.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text() == version:
            return dest
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(source, dest)
        if any(PLOTLY.glob("*.js")):  # absent if the fetch was skipped: the app then draws with st.plotly_chart
            shutil.copytree(PLOTLY, dest / "app" / "static" / "plotly")
        todo = [str(p) for p in dest.rglob("*") if p.is_file() and p.suffix in COMPRESSIBLE
                and p.stat().st_size >= MIN_BYTES]
        todo.sort(key=lambda p: -os.path.getsize(p))  # the slow ones first, so the pool ends together
        with ProcessPoolExecutor(max_workers=workers or os.cpu_count()) as pool:
            list(pool.map(_compress, todo))
        stamp.write_text(version)
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dest", type=Path, help="folder to fill (nginx's root for /static/)")
    args = parser.parse_args(argv)
    print(build(args.dest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
