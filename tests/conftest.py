"""Shared pytest setup: make the repository root importable (``import transformer_core``)
and the ``tests`` folder importable (``import seeds_reference``) whatever the working directory."""
import pathlib
import sys

_TESTS = pathlib.Path(__file__).resolve().parent
for _path in (_TESTS.parent, _TESTS):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
