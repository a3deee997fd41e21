"""The one ablation routine (``transformer_core.analysis.ablation.ranking``) with each kind of model's measure gives
what a hand-written ablation gives: a copy of the model whose W_O has the head's input columns zeroed (the head's
context times W_O is then 0; W_O's bias stays), run plainly and measured by hand. The routine's batching (copies of
the input, copy i ablating head i; several passes per layer when the measure's group is smaller) is what is tested.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
import tiny_checkpoints as tc
import torch

from transformer_core import models
from transformer_core.analysis.ablation import ranking
from transformer_core.analysis.ablation.induction import (HELD_OUT, InductionAccuracy, accuracies,
                                                          held_out_sequences, rank_heads)
from transformer_core.analysis.ablation.next_token import rank_heads as rank_decoder_heads


def without_head(module, layer: int, head: int, d_head: int):
    """A copy of ``module`` with head ``(layer, head)`` knocked out by hand: its columns of W_O zeroed."""
    out = copy.deepcopy(module)
    with torch.no_grad():
        out.layers[layer].attention.W_O.weight[:, head * d_head:(head + 1) * d_head] = 0.0
    return out


def test_induction_accuracy_ranked_in_batches_is_each_heads_own_ablation():
    face = models.load("causal")
    c = face.config
    ranked = rank_heads(face)
    ids = held_out_sequences(face.module.vocab_size, **HELD_OUT)
    for layer in range(c.n_layers):
        for head in range(c.n_heads):
            with torch.no_grad():
                logits = without_head(face.module, layer, head, c.d_head)(ids)
            assert ranked["accuracy"][layer, head] == pytest.approx(
                accuracies(logits, ids, HELD_OUT["period"])["repeat"], abs=1e-6), (layer, head)
    assert ranked["intact"]["accuracy"]["repeat"] > 0.8
    # the previous-token head L0H0 feeds the induction heads (docs/causal_model.md); one layer-1 head alone does not
    assert ranked["accuracy"][0, 0] < ranked["intact"]["accuracy"]["repeat"] / 2


def test_a_smaller_group_splits_a_layer_into_passes_with_the_same_numbers():
    face = models.load("causal")
    ids = held_out_sequences(face.module.vocab_size, batch=8, period=24, length=48, seed=3)

    class ThreeAtATime(InductionAccuracy):
        def group(self, n_heads):
            return 3  # 4 heads: passes of 3 and 1

    calls = []
    whole = ranking.rank_heads(face, InductionAccuracy(ids, 24))["values"]
    split = ranking.rank_heads(face, ThreeAtATime(ids, 24), progress=lambda d, t: calls.append((d, t)))["values"]
    assert calls[-1] == (4, 4)  # 2 layers × 2 passes
    np.testing.assert_allclose(split, whole, atol=1e-6)
    assert whole.shape == (2, 4, 2)


def test_next_token_probabilities_ranked_on_a_tiny_decoder_are_each_heads_own_ablation(tiny_checkpoints):
    folder, _hf = tiny_checkpoints["llama"]
    face = models.load(str(folder))
    c = face.config
    ranked = rank_decoder_heads(tc.TEXT, targets=(" Mary", " John"), face=face)
    ids = face.encode(tc.TEXT)[0]
    mary = face.tokenizer.token_to_id("ĠMary")
    for layer in range(c.n_layers):
        for head in range(c.n_heads):
            with torch.no_grad():
                logits = without_head(face.module, layer, head, c.d_head)(torch.tensor([ids]))[0, -1]
            expected = torch.softmax(logits.double(), -1)[mary].item()
            assert ranked["probs"][layer, head, 0] == pytest.approx(expected, abs=1e-7), (layer, head)
    assert np.abs(ranked["effect"]).max() > 1e-4  # some head changes the prediction
