"""Next-token predictions: softmax with temperature, top-k/top-p with "other", seeded sampling."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_core.analysis.generation import sample
from transformer_core.analysis.predictions import kept, sampling_probs, softmax_t, top_tokens
from transformer_core.models.causal import load_causal_model, run_causal

IDS = [5, 17, 3, 9, 40, 22, 5, 17, 3, 9, 40, 22]


@pytest.fixture(scope="module")
def logits():
    return run_causal(IDS).stages["logits"][0]  # [pos, vocab]


def test_matches_torch_softmax_and_sums_to_one(logits):
    for t in (0.5, 1.0, 3.0):
        expected = torch.softmax(torch.tensor(logits, dtype=torch.float64) / t, dim=-1).numpy()
        np.testing.assert_allclose(softmax_t(logits, t), expected, atol=1e-12)
        np.testing.assert_allclose(softmax_t(logits, t).sum(-1), 1.0, atol=1e-12)


def test_low_medium_high_temperature_finite_and_ordered(logits):
    cold, warm, hot = (softmax_t(logits, t) for t in (0.01, 1.0, 100.0))
    with np.errstate(over="ignore", invalid="ignore"):  # the naive formula overflows at T = 0.01
        naive = np.exp(logits / 0.01) / np.exp(logits / 0.01).sum(-1, keepdims=True)
    assert not np.isfinite(naive).all()
    for p in (cold, warm, hot):
        assert np.isfinite(p).all() and np.allclose(p.sum(-1), 1.0)
    top = logits.argmax(-1)
    rows = np.arange(len(top))
    # the top token's probability falls as T rises; entropy rises; T → 0 is the argmax
    assert (cold[rows, top] >= warm[rows, top]).all() and (warm[rows, top] >= hot[rows, top]).all()
    entropy = [-(p * np.log(np.where(p > 0, p, 1))).sum(-1) for p in (cold, warm, hot)]
    assert (entropy[0] <= entropy[1]).all() and (entropy[1] <= entropy[2]).all()
    assert (hot.max(-1) - hot.min(-1) < 0.01).all()  # nearly uniform over 64 tokens
    assert np.array_equal(softmax_t(logits, 1e-6), np.eye(64)[top])


def test_temperature_divides_logits_not_log_probabilities():
    z = np.array([2.0, 1.0, 0.0])
    expected = np.exp(z / 0.5) / np.exp(z / 0.5).sum()
    np.testing.assert_allclose(softmax_t(z, 0.5), expected)
    log_p = np.log(np.exp(z) / np.exp(z).sum())  # a wrong formula: log-probabilities / T, not renormalised
    assert not np.allclose(np.exp(log_p / 0.5), expected)
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="temperature must be a finite number above 0"):
            softmax_t(z, bad)


def test_ties_share_the_maximum_at_tiny_temperature():
    np.testing.assert_allclose(softmax_t(np.array([1.0, 3.0, 3.0]), 0.01), [0.0, 0.5, 0.5], atol=1e-80)  # e^-200


def test_top_k_with_other_sums_to_one_and_top_p_is_the_smallest_set():
    p = np.array([0.05, 0.5, 0.2, 0.25])
    bars = top_tokens(p, k=2)
    assert bars == [("1", 0.5), ("3", 0.25), ("other", pytest.approx(0.25))]
    assert sum(v for _, v in bars) == pytest.approx(1.0)
    assert list(kept(p, p=0.7)) == [1, 3]  # 0.5 < 0.7 ≤ 0.75
    assert list(kept(p, p=0.75)) == [1, 3]
    assert list(kept(p, k=1, p=0.9)) == [1]
    assert top_tokens(p, k=None) == [("1", 0.5), ("3", 0.25), ("2", 0.2), ("0", 0.05)]  # nothing left: no "other"
    np.testing.assert_allclose(sampling_probs(p, k=2), [0, 2 / 3, 0, 1 / 3])
    with pytest.raises(ValueError):
        kept(p, k=0)
    with pytest.raises(ValueError):
        kept(p, p=1.5)


def test_sampling_is_seeded_and_the_repeat_loses_less():
    model = load_causal_model()
    a = sample(model, IDS[:6] + IDS[:6], 12, temperature=1.0, k=10, seed=3)
    b = sample(model, IDS[:6] + IDS[:6], 12, temperature=1.0, k=10, seed=3)
    c = sample(model, IDS[:6] + IDS[:6], 12, temperature=1.0, k=10, seed=4)
    assert a["ids"] == b["ids"] and np.array_equal(a["loss"], b["loss"])
    assert len(a["ids"]) == 24 and a["n_prompt"] == 12
    assert a["ids"] != c["ids"] or a["ids"][12:] == IDS[:6] * 2  # another seed, other draws (unless both copy)
    assert len(a["loss"]) == 23 and np.isnan(a["chosen_prob"][:11]).all()
    greedy = sample(model, IDS[:6] + IDS[:6], 6, temperature=0.01, seed=0)
    assert greedy["ids"][12:] == IDS[:6]  # T → 0 copies the period, the induction
    assert greedy["loss"][6:].mean() < greedy["loss"][:5].mean()
