"""transformer_core as an installable library: the wheel, a fresh virtual environment, the notebook.

The wheel is built with ``pip wheel . --no-deps``. It must hold the package and the causal model's data
and nothing of the app (``ui/``, ``pages/``, ``tests/``). It is installed without dependencies into a new
virtual environment whose only link to this one is a ``.pth`` line naming this environment's
site-packages (torch, plotly … are large; installing them again would prove nothing about our wheel).
From a folder outside the checkout, ``import transformer_core`` must come from that venv, and the console
command ``attention-export --help`` must work and write nothing.
"""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "minilm_attention.ipynb"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out)],
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
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(subprocess.check_output([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        text=True).strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
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


def test_the_notebook_runs_headless_and_shows_plotly_figures():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    plots = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert len(plots) == 2  # the focused head, then every head of the layer
    text = "".join(o.get("text", "") for o in outputs)
    assert "largest difference from the capture" in text and "[CLS]" in text
