"""Top-k with top-p against Hugging Face's own logits processors.

The reference is ``transformers``' ``TopKLogitsWarper`` followed by ``TopPLogitsWarper`` — the order
``generate`` applies them — then a softmax over what is left. Imported here only (the app does not need
transformers). On the old rule (the tokens both filters keep, each on the original probabilities) the
example below gives [0.545, 0.455, 0, 0, 0] instead of [1, 0, 0, 0, 0], and these tests fail.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_core.analysis.predictions import FILTER_ORDERS, kept, sampling_probs, top_tokens

transformers = pytest.importorskip("transformers")


def hf_sampling_probs(probs: np.ndarray, k: int | None, p: float | None) -> np.ndarray:
    """softmax(TopPLogitsWarper(p)(TopKLogitsWarper(k)(log probs))): what ``generate`` samples from."""
    scores = torch.log(torch.tensor(probs, dtype=torch.float64))[None]  # [1, vocab]
    ids = torch.zeros(1, 1, dtype=torch.long)  # the warpers ignore the input ids
    if k is not None:
        scores = transformers.TopKLogitsWarper(top_k=k)(ids, scores)
    if p is not None:
        scores = transformers.TopPLogitsWarper(top_p=p)(ids, scores)
    return torch.softmax(scores, dim=-1)[0].numpy()


def test_issue_example_matches_hugging_face():
    p = np.array([0.30, 0.25, 0.20, 0.15, 0.10])
    expected = hf_sampling_probs(p, 2, 0.5)
    np.testing.assert_allclose(expected, [1, 0, 0, 0, 0], atol=1e-12)  # the reference itself, by hand
    np.testing.assert_allclose(sampling_probs(p, 2, 0.5), expected, atol=1e-12)
    assert [t for t, _ in top_tokens(p, 2, 0.5)] == ["0", "other"]
    # the project's earlier rule stays, named
    np.testing.assert_allclose(sampling_probs(p, 2, 0.5, order="both"), [0.30 / 0.55, 0.25 / 0.55, 0, 0, 0])
    assert set(FILTER_ORDERS) == {"hf", "both"}


@pytest.mark.parametrize("seed", range(40))
def test_random_distributions_match_hugging_face(seed):
    rng = np.random.default_rng(seed)
    vocab = int(rng.integers(2, 80))
    probs = rng.dirichlet(np.full(vocab, float(rng.choice([0.1, 0.5, 2.0]))))
    probs = np.maximum(probs, 1e-300)
    probs /= probs.sum()
    k = int(rng.integers(1, vocab + 1))
    p = float(rng.uniform(0.05, 1.0))
    expected = hf_sampling_probs(probs, k, p)
    # a cut exactly at p differs only by rounding between float64 cumsums: skip such draws
    part = np.sort(probs)[::-1][:k]
    cum = np.cumsum(part) / part.sum()
    if np.min(np.abs(cum - p)) < 1e-9:
        pytest.skip("cumulative probability within 1e-9 of top_p")
    np.testing.assert_allclose(sampling_probs(probs, k, p), expected, atol=1e-10)
    assert set(kept(probs, k, p).tolist()) == set(np.flatnonzero(expected > 0).tolist())
    # each filter alone: both orders agree with Hugging Face
    for order in FILTER_ORDERS:
        np.testing.assert_allclose(sampling_probs(probs, k, None, order), hf_sampling_probs(probs, k, None), atol=1e-10)
        np.testing.assert_allclose(sampling_probs(probs, None, p, order), hf_sampling_probs(probs, None, p),
                                   atol=1e-10)
