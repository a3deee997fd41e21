"""Translation catalogs, with Babel: extract the marked messages, update the Chinese catalog, compile it.

    python scripts/i18n.py            # extract → transformer_core/locales/messages.pot, update zh .po, compile .mo
    python scripts/i18n.py --check    # exit 1 if the .pot, .po or .mo are not up to date with the code

The compiled ``messages.mo`` is committed, so ``pip install -r requirements.txt && streamlit run app.py``
needs no Babel; ``tests/test_i18n_catalog.py`` checks that it matches the ``.po`` and the code.
"""
from __future__ import annotations

import argparse
import fcntl
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCALES = ROOT / "transformer_core" / "locales"
POT = LOCALES / "messages.pot"
KEYWORDS = ["-k", "_", "-k", "N_", "-k", "ngettext:1,2", "-k", "pgettext:1c,2"]


def extract(out: Path) -> None:
    """Extract into ``out`` through a file beside it, renamed over it when whole: a reader (another run of this
    script, a test) never sees a half-written catalogue. An update from an empty .pot would drop every translation."""
    partial = out.with_name(out.name + ".partial")
    subprocess.run([sys.executable, "-m", "babel.messages.frontend", "extract", "-F", str(ROOT / "babel.cfg"),
                    *KEYWORDS, "--no-default-keywords", "--omit-header", "--no-location", "--sort-output", "--no-wrap",
                    "-o", str(partial), "."], cwd=ROOT, check=True, capture_output=True)
    if partial.stat().st_size == 0:
        partial.unlink()
        raise SystemExit("extraction found no messages: the catalogues are left as they were")
    os.replace(partial, out)


def update() -> None:
    subprocess.run([sys.executable, "-m", "babel.messages.frontend", "update", "-i", str(POT), "-d", str(LOCALES),
                    "-l", "zh", "--init-missing", "--no-fuzzy-matching", "--ignore-obsolete", "--no-wrap",
                    "--ignore-pot-creation-date"],
                   cwd=ROOT, check=True, capture_output=True)


def compile_mo(po: Path) -> bytes:
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with po.open("rb") as f:
        cat = read_po(f)
    buf = io.BytesIO()
    write_mo(buf, cat, use_fuzzy=False)
    return buf.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that everything is up to date")
    args = parser.parse_args()
    po = LOCALES / "zh" / "LC_MESSAGES" / "messages.po"
    if args.check:
        with tempfile.TemporaryDirectory() as scratch:  # never into the checkout (tests run this)
            fresh = Path(scratch) / "messages.check.pot"
            extract(fresh)
            stale = fresh.read_bytes() != POT.read_bytes() or compile_mo(po) != po.with_suffix(".mo").read_bytes()
        print("catalogs are stale: run python scripts/i18n.py" if stale else "catalogs up to date")
        return int(stale)
    # one run at a time on this checkout (two engineers' runs at once once left an empty .pot and an empty .po)
    with open(Path(tempfile.gettempdir()) / f"ae-i18n-{abs(hash(str(ROOT)))}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        extract(POT)
        update()
        po.with_suffix(".mo").write_bytes(compile_mo(po))
    return 0


if __name__ == "__main__":
    sys.exit(main())
