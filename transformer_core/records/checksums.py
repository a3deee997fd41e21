"""SHA-256 checks for the weights files we load (MiniLM from its package, our causal model from the repo)."""
from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks.

    Raises:
        OSError: the file is missing or unreadable.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def require_sha256(path: Path, expected: str, error: type[Exception], *, what: str, unreadable_fix: str,
                   mismatch: str) -> None:
    """Raise ``error`` unless ``path`` is readable and its SHA-256 is ``expected``.

    The message names ``what`` and the path; for a mismatch both digests and ``mismatch`` (why and
    what to do), for an unreadable file the OS error and ``unreadable_fix``.
    """
    try:
        actual = sha256_of(path)
    except OSError as err:
        raise error(f"{what} missing or not readable at {path}: {err}; {unreadable_fix}") from err
    if actual != expected:
        raise error(f"{what} at {path} {mismatch.format(actual=actual, expected=expected)}")
