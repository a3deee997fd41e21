"""scripts/fetch_plotly.py: plotly.js from the npm registry into static/plotly/, checked against the committed
SHA-256 before anything is written; a wrong or unreachable tarball leaves nothing behind and says why in one line.
The registry here is a folder of fake tarballs (``npm_config_registry=file://…``), so nothing is downloaded."""
from __future__ import annotations

import hashlib
import importlib.util
import io
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("fetch_plotly", ROOT / "scripts" / "fetch_plotly.py")
fetch_plotly = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fetch_plotly)


def _registry(folder: Path, files: dict[tuple[str, str], bytes]) -> str:
    """Fake registry: one tarball per package holding ``files`` {(package, member): bytes} → its file:// URL."""
    packages: dict[str, dict[str, bytes]] = {}
    for (package, member), data in files.items():
        packages.setdefault(package, {})[member] = data
    for package, members in packages.items():
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            for member, data in members.items():
                info = tarfile.TarInfo(member)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        where = folder / package / "-"
        where.mkdir(parents=True)
        (where / f"{package}-4.1.1.tgz").write_bytes(buffer.getvalue())
    return folder.as_uri()


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """static/plotly/ in a temporary folder, with SHA256SUMS pinning three small literal files."""
    contents = {name: f"// {name}\n".encode() for name in fetch_plotly.SOURCES}
    static = tmp_path / "static"
    static.mkdir()
    (static / "SHA256SUMS").write_text("# pins\n" + "".join(
        f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in contents.items()))
    monkeypatch.setattr(fetch_plotly, "STATIC", static)
    monkeypatch.setattr(fetch_plotly, "SUMS", static / "SHA256SUMS")
    return static, contents


def test_fetches_each_pinned_file_from_its_tarball(sandbox, tmp_path, monkeypatch, capsys):
    static, contents = sandbox
    files = {fetch_plotly.SOURCES[name][::2]: data for name, data in contents.items()}
    monkeypatch.setenv("npm_config_registry", _registry(tmp_path / "registry", files))
    assert fetch_plotly.main(["--check"]) == 1 and "missing" in capsys.readouterr().err
    assert fetch_plotly.main([]) == 0
    assert {p.name: p.read_bytes() for p in static.iterdir() if p.name != "SHA256SUMS"} == contents
    (static / "LICENSE").write_text("changed")  # a damaged copy is fetched again
    assert fetch_plotly.main([]) == 0 and (static / "LICENSE").read_bytes() == contents["LICENSE"]


def test_a_file_that_is_not_the_pinned_one_is_refused_and_not_written(sandbox, tmp_path, monkeypatch, capsys):
    static, contents = sandbox
    files = {fetch_plotly.SOURCES[name][::2]: data for name, data in contents.items()}
    bundle = next(iter(fetch_plotly.SOURCES))
    files[fetch_plotly.SOURCES[bundle][::2]] = b"// someone else's plotly.js\n"
    monkeypatch.setenv("npm_config_registry", _registry(tmp_path / "registry", files))
    assert fetch_plotly.main([]) == 1
    err = capsys.readouterr().err
    assert "SHA-256 differs" in err and err.count("\n") == 1
    assert not (static / bundle).exists() and not list(static.glob("*.part"))


def test_an_unreachable_registry_says_which_url(sandbox, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("npm_config_registry", (tmp_path / "nowhere").as_uri())
    assert fetch_plotly.main([]) == 1
    assert "cannot fetch file://" in capsys.readouterr().err
