"""PositionwiseFeedForward: activation, hidden stage, post-LN output."""
import math

import pytest
import torch
import torch.nn.functional as F

from transformer_core import Encoder, EncoderConfig, PositionwiseFeedForward, capture

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _literal_ffn(activation):
    """d_model 2, d_ff 3 with hand-set weights: W_1 x = [x0, x1, x0 + x1], W_2 h = [h0 + h2, h1]."""
    ffn = PositionwiseFeedForward(2, 3, activation=activation).eval()
    with torch.no_grad():
        ffn.W_1.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
        ffn.W_1.bias.zero_()
        ffn.W_2.weight.copy_(torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))
        ffn.W_2.bias.zero_()
    return ffn


def _gelu(x):
    return 0.5 * x * (1 + math.erf(x / math.sqrt(2)))


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_literal_hidden_and_output(activation):
    ffn = _literal_ffn(activation)
    x = torch.tensor([[[1.0, -2.0]]])  # W_1 x = [1, -2, -1]
    act = (lambda z: max(z, 0.0)) if activation == "relu" else _gelu
    hidden_expected = torch.tensor([[[act(1.0), act(-2.0), act(-1.0)]]])
    with torch.no_grad(), capture(ffn) as stages:
        out = ffn(x)
    assert torch.allclose(stages["hidden"], hidden_expected, atol=1e-6)
    if activation == "relu":
        assert torch.equal(stages["hidden"], torch.tensor([[[1.0, 0.0, 0.0]]]))
    else:  # GELU lets small negative values through
        assert torch.allclose(stages["hidden"], torch.tensor([[[0.8413447, -0.0455003, -0.1586553]]]), atol=1e-6)
    # residual: x + W_2 h, then LayerNorm over 2 features → [-1, 1] or [1, -1] (times ~1, eps aside)
    h = hidden_expected[0, 0]
    residual = torch.tensor([1.0 + h[0] + h[2], -2.0 + h[1]])
    centred = residual - residual.mean()
    expected = centred / torch.sqrt(centred.pow(2).mean() + 1e-5)
    assert torch.allclose(out[0, 0], expected, atol=1e-5)
    assert torch.allclose(out, torch.tensor([[[1.0, -1.0]]]), atol=1e-4)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_hidden_is_activation_of_w1_and_output_is_norm_residual(activation):
    torch.manual_seed(0)
    ffn = PositionwiseFeedForward(8, 20, activation=activation).eval()
    with torch.no_grad():
        ffn.norm.weight.uniform_(0.5, 1.5)
        ffn.norm.bias.uniform_(-0.5, 0.5)
    x = torch.randn(3, 4, 8)
    with torch.no_grad(), capture(ffn) as stages:
        out = ffn(x)
        hidden = ACTIVATIONS[activation](ffn.W_1(x))
        expected = ffn.norm(x + ffn.W_2(hidden))
    assert set(stages) == {"hidden", "output"}
    assert stages["hidden"].shape == (3, 4, 20)
    assert torch.allclose(stages["hidden"], hidden, atol=1e-6)
    assert torch.allclose(out, expected, atol=1e-6)
    assert torch.equal(stages["output"], out)
    if activation == "relu":
        assert (stages["hidden"] >= 0).all() and (stages["hidden"] == 0).any()
    else:
        assert (stages["hidden"] < 0).any()


def test_feed_forward_is_position_wise():
    torch.manual_seed(1)
    ffn = PositionwiseFeedForward(6, 12).eval()
    x = torch.randn(2, 5, 6)
    with torch.no_grad():
        full = ffn(x)
        one_by_one = torch.cat([ffn(x[:, i:i + 1]) for i in range(5)], dim=1)
    assert torch.allclose(full, one_by_one, atol=1e-6)


def test_encoder_uses_configured_activation():
    x = torch.randn(1, 3, 8)
    for activation, kind in (("relu", torch.nn.ReLU), ("gelu", torch.nn.GELU)):
        model = Encoder(EncoderConfig(d_model=8, n_heads=2, d_ff=16, activation=activation)).eval()
        assert isinstance(model.layers[0].feed_forward.activation, kind)
        with torch.no_grad(), capture(model) as stages:
            model(x)
        ffn = model.layers[0].feed_forward
        attn_out = stages["layers.0.attention.output"]
        with torch.no_grad():
            assert torch.allclose(stages["layers.0.feed_forward.hidden"],
                                  ACTIVATIONS[activation](ffn.W_1(attn_out)), atol=1e-6)


def test_dropout_only_in_training():
    torch.manual_seed(2)
    ffn = PositionwiseFeedForward(8, 16, dropout=0.5)
    x = torch.randn(2, 3, 8)
    with torch.no_grad():
        ffn.eval()
        assert torch.equal(ffn(x), ffn(x))
        ffn.train()
        torch.manual_seed(3)
        a = ffn(x)
        torch.manual_seed(4)
        b = ffn(x)
    assert not torch.equal(a, b)


@pytest.mark.parametrize("kwargs, message", [
    ({"d_model": 4, "d_ff": 8, "activation": "tanh"}, "'tanh'"),
    ({"d_model": 0, "d_ff": 8}, "d_model=0"),
    ({"d_model": 4, "d_ff": -1}, "d_ff=-1"),
])
def test_bad_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PositionwiseFeedForward(**kwargs)
