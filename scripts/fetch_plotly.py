"""Fetch plotly.js's cartesian bundle and its zh-CN locale from the npm registry into static/plotly/, once.

Usage: ``python scripts/fetch_plotly.py`` (part of the README's install commands, the Dockerfile and .ci/run).

Our Plotly element (``ui/shell/chart.py``) loads these files from ``/app/static/plotly/``; nothing is downloaded
while the app runs. They are fetched at install, not committed, so the repository holds no third party's minified
code: the pinned versions and each file's SHA-256 are in ``static/plotly/SHA256SUMS`` (committed); a file already
there with the right SHA-256 is kept. Exit code 0 when every file is in place, 1 with one line saying why otherwise
(network down, a tarball or file that is not the one pinned). ``--check`` fetches nothing and says what is missing.
The registry is ``$npm_config_registry`` if set (as npm reads it), else https://registry.npmjs.org.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "static" / "plotly"
SUMS = STATIC / "SHA256SUMS"
# file written → (npm package, version, member of its tarball)
SOURCES = {
    "plotly-cartesian-4.1.1.min.js": ("plotly.js-cartesian-dist-min", "4.1.1", "package/plotly-cartesian.min.js"),
    "plotly-locale-zh-cn-4.1.1.js": ("plotly.js", "4.1.1", "package/dist/plotly-locale-zh-cn.js"),
    "LICENSE": ("plotly.js-cartesian-dist-min", "4.1.1", "package/LICENSE"),
}


def pinned() -> dict[str, str]:
    """``SHA256SUMS`` as {file name: SHA-256 hex}."""
    sums = {}
    for line in SUMS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split()
            sums[name] = digest
    return sums


def missing(sums: dict[str, str]) -> list[str]:
    """The pinned files absent from static/plotly/ or not matching their SHA-256."""
    return [name for name, digest in sums.items()
            if not (STATIC / name).is_file() or hashlib.sha256((STATIC / name).read_bytes()).hexdigest() != digest]


def tarball(package: str, version: str) -> bytes:
    """The package's tarball from the registry (raises OSError with the URL on any failure)."""
    registry = os.environ.get("npm_config_registry", "https://registry.npmjs.org").rstrip("/")
    url = f"{registry}/{package}/-/{package.rsplit('/', 1)[-1]}-{version}.tgz"
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            return response.read()
    except (urllib.error.URLError, TimeoutError) as err:
        raise OSError(f"cannot fetch {url}: {getattr(err, 'reason', err)}") from None


def fetch(names: list[str], sums: dict[str, str]) -> None:
    """Write ``names`` into static/plotly/, each checked against its SHA-256 before it is written."""
    by_tarball: dict[tuple[str, str], list[str]] = {}
    for name in names:
        package, version, _ = SOURCES[name]
        by_tarball.setdefault((package, version), []).append(name)
    STATIC.mkdir(parents=True, exist_ok=True)
    for (package, version), wanted in by_tarball.items():
        with tarfile.open(fileobj=io.BytesIO(tarball(package, version)), mode="r:gz") as archive:
            for name in wanted:
                member = archive.extractfile(SOURCES[name][2])
                if member is None:
                    raise OSError(f"{package}@{version} has no {SOURCES[name][2]}")
                data = member.read()
                if hashlib.sha256(data).hexdigest() != sums[name]:
                    raise OSError(f"{package}@{version}'s {SOURCES[name][2]} is not the pinned file (SHA-256 differs)")
                temporary = STATIC / (name + ".part")
                temporary.write_bytes(data)
                temporary.replace(STATIC / name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fetch nothing; exit 1 if a file is missing")
    args = parser.parse_args(argv)
    sums = pinned()
    todo = missing(sums)
    if todo and not args.check:
        try:
            fetch(todo, sums)
        except OSError as err:
            print(f"fetch_plotly: {err}", file=sys.stderr)
            return 1
        todo = missing(sums)
    if todo:
        print(f"fetch_plotly: missing in {STATIC}: {', '.join(todo)}", file=sys.stderr)
        return 1
    print(f"fetch_plotly: plotly.js in place ({', '.join(sums)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
