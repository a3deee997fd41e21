"""On the explorer's toy model: shared key/value heads (``n_kv_heads``) and the sliding-window
mask with sinks.

References: torch's own ``F.scaled_dot_product_attention(..., enable_gqa=True)`` on the toy model's queries and its
key/value heads (projected here from the model's ``W_K``/``W_V``, not read from the trace); the traces of the code
before the choice existed (hashes below, computed from commit f4833a6's ``transformer_core``); a literal mask.
"""
from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from transformer_core import EncoderConfig, run_toy
from transformer_core.analysis.shared_kv import kv_bytes_per_token, toy_figures, trace_kv_heads
from transformer_core.figures.heads import heads_figure
from transformer_core.nn import masks
from transformer_core.nn.encoder import Encoder

SENTENCES = ["The cat sat on the mat.", "The dog chased the cat!"]

# sha256 over (stage name, stage bytes) in sorted order, for run_toy(SENTENCES, EncoderConfig(d_model, n_heads,
# d_ff=4·d_model, n_layers, seed), causal=...) as the code computed them before n_kv_heads existed (commit f4833a6)
OLD = {(64, 8, False, 0, 1): "f5fc095d5e037e81fbe277d3bbd972787fd39dd3fc253782043632934a3d3438",
       (64, 8, True, 3, 2): "7eb739bcac0b0f3868c7c6600fb26012f60c39b4d9e325a46c58e04a2e6f07b7",
       (48, 6, True, 1, 1): "9ad39b604e2bedace95f45f4e3e84940ecb1c7a315d955691f9aedfb585c8771",
       (16, 16, False, 7, 1): "811a685f28c8cdf529fa368f26a2bd8ed98f020c979d17e392b2f3a886fa24e5"}

# w = 3, s = 1, T = 6: row = query position, column = key position, 1 = may attend (True). Query i sees itself and
# the two keys before it, and key 0 (the sink) always.
WINDOW3_SINK1 = np.array([[1, 0, 0, 0, 0, 0],
                          [1, 1, 0, 0, 0, 0],
                          [1, 1, 1, 0, 0, 0],
                          [1, 1, 1, 1, 0, 0],
                          [1, 0, 1, 1, 1, 0],
                          [1, 0, 0, 1, 1, 1]], dtype=bool)


def digest(trace) -> str:
    h = hashlib.sha256()
    for name in sorted(trace.stages):
        h.update(name.encode())
        h.update(trace.stages[name].tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("key", list(OLD))
def test_n_kv_heads_equal_to_n_heads_gives_the_old_numbers_bit_for_bit(key):
    d, h, causal, seed, layers = key
    for n_kv in (None, h):  # the default and the explicit choice
        config = EncoderConfig(d_model=d, n_heads=h, d_ff=4 * d, n_layers=layers, seed=seed, n_kv_heads=n_kv)
        trace = run_toy(SENTENCES, config, causal=causal)
        assert digest(trace) == OLD[key]
        assert trace.settings["n_kv_heads"] == h and "window" not in trace.settings


def kv_heads(model: Encoder, x: torch.Tensor, layer: int, n_kv: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The layer's key and value heads ``[batch, kv_head, pos, d_head]``, projected from its own weights."""
    att = model.layers[layer].attention
    batch, pos, _ = x.shape
    split = lambda t: t.view(batch, pos, n_kv, att.d_k).transpose(1, 2)  # noqa: E731
    with torch.no_grad():
        return split(att.W_K(x)), split(att.W_V(x))


@pytest.mark.parametrize("n_heads, n_kv", [(8, 1), (8, 2), (8, 4), (8, 8), (6, 3), (12, 4)])
@pytest.mark.parametrize("window", [None, 3])
def test_context_equals_torch_sdpa_with_enable_gqa(n_heads, n_kv, window):
    config = EncoderConfig(d_model=8 * n_heads, n_heads=n_heads, d_ff=32, n_layers=2, seed=5, n_kv_heads=n_kv)
    trace = run_toy(SENTENCES + ["short one"], config, causal=True, window=window, sinks=1)
    model = Encoder(config).eval()
    real = np.arange(trace.stage("q").shape[2])[None, :] < np.array(trace.lengths)[:, None]  # [batch, query_pos]
    for layer in range(2):
        x = torch.from_numpy(trace.stages["embeddings"] if layer == 0
                             else trace.stages[f"layers.{layer - 1}.feed_forward.output"])
        k_kv, v_kv = kv_heads(model, x, layer, n_kv)
        q = torch.from_numpy(trace.stage("q", layer))
        theirs = F.scaled_dot_product_attention(q, k_kv, v_kv, attn_mask=torch.from_numpy(trace.mask),
                                                enable_gqa=True).numpy()
        ours = trace.stage("context", layer)
        assert np.abs(ours - theirs).transpose(0, 2, 1, 3)[real].max() < 2e-6  # padding rows may see no key: NaN in torch, 0 here
        # the per-query-head k and v of the trace are the kv heads repeated: query head h reads kv head h // group
        group = n_heads // n_kv
        for h in range(n_heads):
            np.testing.assert_array_equal(trace.stage("k", layer)[:, h], k_kv[:, h // group].numpy())
            np.testing.assert_array_equal(trace.stage("v", layer)[:, h], v_kv[:, h // group].numpy())
        assert trace_kv_heads(trace.settings, n_heads) == (None if n_kv == n_heads else
                                                           [h // group for h in range(n_heads)])


def test_the_wrong_pairing_would_be_caught():
    """Query head h paired with kv head h % n_kv (torch's ``repeat`` instead of ``repeat_interleave``) gives other
    numbers, so the test above can fail."""
    config = EncoderConfig(d_model=64, n_heads=8, d_ff=32, seed=5, n_kv_heads=2)
    trace = run_toy(SENTENCES, config, causal=True)
    k_kv, v_kv = kv_heads(Encoder(config).eval(), torch.from_numpy(trace.stages["embeddings"]), 0, 2)
    q = torch.from_numpy(trace.stage("q"))
    wrong = F.scaled_dot_product_attention(q, k_kv.repeat(1, 4, 1, 1), v_kv.repeat(1, 4, 1, 1),
                                           attn_mask=torch.from_numpy(trace.mask)).numpy()
    assert np.abs(trace.stage("context") - wrong).max() > 1e-2


def test_shared_heads_have_fewer_parameters_and_the_tiles_say_which_share():
    full = Encoder(EncoderConfig(n_kv_heads=8)).layers[0].attention
    mqa = Encoder(EncoderConfig(n_kv_heads=1)).layers[0].attention
    assert list(mqa.W_K.weight.shape) == [8, 64] and list(full.W_K.weight.shape) == [64, 64]
    assert mqa.kv_head_of == [0] * 8 and full.kv_head_of == list(range(8))
    figures = toy_figures(64, 8, 2)
    assert figures["params"] == {"W_Q": 4096, "W_K": 1024, "W_V": 1024, "W_O": 4096, "total": 10240}
    assert figures["kv_bytes_per_token"] == 2 * 1 * 2 * 8 * 4 == kv_bytes_per_token(1, 2, 8)
    assert figures["mha_kv_bytes_per_token"] == 512
    trace = run_toy(SENTENCES, EncoderConfig(n_kv_heads=2))
    fig = heads_figure(trace, "weights")
    titles = [a.text for a in fig.layout.annotations]
    assert titles == [f"head {h} · KV {h // 4}" for h in range(8)]
    colours = [a.font.color for a in fig.layout.annotations]
    assert len(set(colours[:4])) == 1 and len(set(colours[4:])) == 1 and colours[0] != colours[4]
    plain = heads_figure(run_toy(SENTENCES, EncoderConfig()), "weights")
    assert [a.text for a in plain.layout.annotations] == [f"head {h}" for h in range(8)]


@pytest.mark.parametrize("n_kv", [3, 0, -1, 16, 2.0, True])
def test_a_non_divisor_is_refused(n_kv):
    with pytest.raises(ValueError, match="n_kv_heads"):
        EncoderConfig(n_heads=8, n_kv_heads=n_kv)


def test_sliding_window_with_a_sink_is_the_literal_mask():
    assert torch.equal(masks.sliding_window_mask(6, window=3, sinks=1), torch.from_numpy(WINDOW3_SINK1))
    trace = run_toy(["one two three four five six"], EncoderConfig(), window=3, sinks=1)
    np.testing.assert_array_equal(trace.mask[0, 0], WINDOW3_SINK1)
    assert (trace.settings["window"], trace.settings["sinks"]) == (3, 1)
    weights = trace.stage("weights")[0]
    assert (weights[:, ~WINDOW3_SINK1] == 0).all() and np.allclose(weights.sum(-1), 1)
    # without the sink, query 4 no longer sees key 0; with the window as wide as the sentence it is the causal mask
    no_sink = run_toy(["one two three four five six"], EncoderConfig(), window=3).mask[0, 0]
    assert not no_sink[4, 0] and no_sink[4, 2]
    wide = run_toy(["one two three four five six"], EncoderConfig(), window=6).mask[0, 0]
    np.testing.assert_array_equal(wide, np.tril(np.ones((6, 6), bool)))
