"""Ablating heads of the trained causal model, measured on the held-out repeated sequences.

Held to definitions, not to hard-coded numbers: "chance" is 1/vocab, the margin is three binomial
standard errors of a proportion over the repeat's predictions (64 × 24 = 1536); the previous-token
head and the layer-0 head that is *not* one are picked by the held-out previous-token score.
"""
from __future__ import annotations

import math

import pytest
import torch

from transformer_core.analysis.ablation.induction import accuracies, measure
from transformer_core.models import CausalFace
from transformer_core.models.causal import head_scores


def margin(p: float, n: int) -> float:
    """Three standard errors of a proportion ``p`` measured over ``n`` predictions."""
    return 3 * math.sqrt(p * (1 - p) / n)


@pytest.fixture(scope="module")
def face():
    return CausalFace()


@pytest.fixture(scope="module")
def model(face):
    return face.module


@pytest.fixture(scope="module")
def intact(face):
    return measure(face)


def test_intact_model_copies_the_repeat(intact):
    assert intact["accuracy"]["repeat"] > 0.8  # measured 0.885
    assert intact["accuracy"]["first"] < intact["chance"] + margin(intact["chance"], 64 * 23)  # nothing to copy


def test_ablating_every_layer1_head_drops_induction_to_chance(face, intact):
    out = measure(face, [(1, h) for h in range(4)])
    chance, n = out["chance"], out["n_repeat"]
    assert n == 64 * 24
    print(f"\ninduction accuracy intact {intact['accuracy']['repeat']:.4f}, layer 1 ablated "
          f"{out['accuracy']['repeat']:.4f}, chance {chance:.4f} ± {margin(chance, n):.4f}")
    assert abs(out["accuracy"]["repeat"] - chance) <= margin(chance, n)  # measured 0.0182 vs 0.0156 ± 0.0095
    assert out["loss"]["repeat"] > math.log(64)  # no better than a uniform guess (measured 4.79 nats)


def test_previous_token_head_feeds_induction_other_layer0_heads_barely_matter(face, model, intact):
    prev = head_scores(model)["previous_token"][0]
    strongest, weakest = prev.index(max(prev)), prev.index(min(prev))
    assert strongest == 0  # docs/causal_model.md: layer 0 head 0
    base, n = intact["accuracy"]["repeat"], intact["n_repeat"]
    other = measure(face, [(0, weakest)])["accuracy"]["repeat"]
    fed = measure(face, [(0, strongest)])["accuracy"]["repeat"]
    print(f"\nablate L0H{weakest} (prev-token {min(prev):.2f}): {other:.4f}; L0H{strongest} ({max(prev):.2f}): "
          f"{fed:.4f}; intact {base:.4f} ± {margin(base, n):.4f}")
    assert abs(other - base) <= margin(base, n)  # measured 0.8828 vs 0.8854 ± 0.024
    assert fed < base / 2  # measured 0.238: the induction heads lose their input


def test_accuracy_definition_on_a_literal_case():
    ids = torch.tensor([[1, 2, 1, 2]])  # period 2: targets 2 (first) and 1, 2 (repeat)
    logits = torch.full((1, 4, 4), -9.0)
    logits[0, 0, 2] = logits[0, 1, 0] = logits[0, 2, 2] = 9.0  # right, wrong (says 0, not 1), right
    assert accuracies(logits, ids, 2) == {"first": 1.0, "repeat": 0.5}


def test_ablation_leaves_the_shared_model_untouched(face, intact):
    measure(face, [(1, 0)])
    assert measure(face) == intact
