"""EncoderConfig validation, divisors, the word tokenizer, batching, embeddings, run_toy determinism."""
import re

import numpy as np
import pytest
import torch

from transformer_core import PAD, EncoderConfig, batch_tokens, divisors, run_toy, word_tokenize
from transformer_core.nn.embedding import embed_tokens, sinusoidal_positions, token_vector

# --------------------------------------------------------------------------- EncoderConfig


def test_default_config_is_valid_and_hashable():
    config = EncoderConfig()
    assert (config.d_model, config.n_heads, config.d_k) == (64, 8, 8)
    assert hash(config) == hash(EncoderConfig())
    assert EncoderConfig(d_model=12, n_heads=3).d_k == 4


@pytest.mark.parametrize("kwargs, names", [
    ({"n_heads": 3}, ["n_heads=3", "d_model=64"]),
    ({"d_model": 10, "n_heads": 4}, ["n_heads=4", "d_model=10"]),
    ({"d_model": 0}, ["d_model", "0"]),
    ({"d_model": -8}, ["d_model", "-8"]),
    ({"n_heads": 0}, ["n_heads", "0"]),
    ({"n_heads": -2}, ["n_heads", "-2"]),
    ({"d_ff": 0}, ["d_ff", "0"]),
    ({"d_ff": -1}, ["d_ff", "-1"]),
    ({"n_layers": 0}, ["n_layers", "0"]),
    ({"n_layers": -3}, ["n_layers", "-3"]),
    ({"d_model": 64.0}, ["d_model", "64.0"]),
    ({"n_layers": True}, ["n_layers", "True"]),
    ({"dropout": 1.0}, ["dropout", "1.0"]),
    ({"dropout": -0.1}, ["dropout", "-0.1"]),
    ({"dropout": 1.5}, ["dropout", "1.5"]),
    ({"dropout": float("nan")}, ["dropout", "nan"]),
    ({"activation": "tanh"}, ["activation", "'tanh'"]),
    ({"activation": "ReLU"}, ["activation", "'ReLU'"]),
    ({"seed": -1}, ["seed", "-1"]),
])
def test_invalid_config_raises_value_error_naming_the_value(kwargs, names):
    with pytest.raises(ValueError) as info:
        EncoderConfig(**kwargs)
    message = str(info.value)
    for name in names:
        assert name in message, (name, message)


def test_n_heads_error_suggests_divisors():
    with pytest.raises(ValueError, match=re.escape("[1, 2, 3, 4, 6, 8, 12, 24]")):
        EncoderConfig(d_model=24, n_heads=5)


def test_divisors():
    assert divisors(64) == [1, 2, 4, 8, 16, 32, 64]
    assert divisors(1) == [1]
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    assert divisors(13) == [1, 13]


# --------------------------------------------------------------------------- word_tokenize

@pytest.mark.parametrize("text, expected", [
    ("Hello, world!", ["Hello", ",", "world", "!"]),
    ("Don't panic, 猫! 👍🏽", ["Don't", "panic", ",", "猫", "!", "👍🏽"]),
    ("e.g. 3.14 -- (ok?)", ["e", ".", "g", ".", "3", ".", "14", "-", "-", "(", "ok", "?", ")"]),
    ("snake_case", ["snake", "_", "case"]),
    ("我爱猫", ["我", "爱", "猫"]),
    ("我爱 cats", ["我", "爱", "cats"]),
    ("東京タワー", ["東", "京", "タ", "ワ", "ー"]),
    ("👍🏽", ["👍🏽"]),
    ("hi 👋🏿👋", ["hi", "👋🏿", "👋"]),
    ("👨\u200d👩\u200d👧\u200d👦", ["👨\u200d👩\u200d👧\u200d👦"]),  # ZWJ family
    ("👩🏽\u200d💻 ❤️", ["👩🏽\u200d💻", "❤️"]),  # ZWJ with skin tone; variation selector
    ("🇫🇷🇩🇪", ["🇫🇷", "🇩🇪"]),  # flags: pairs of regional indicators
    ("<p class=\"x\">Hi &amp; bye</p>",
     ["<", "p", "class", "=", "\"", "x", "\"", ">", "Hi", "&", "amp", ";", "bye", "<", "/", "p", ">"]),
    ("مرحبا بالعالم!", ["مرحبا", "بالعالم", "!"]),  # RTL Arabic, logical order
    ("مَرْحَبًا", ["مَرْحَبًا"]),  # Arabic with harakat (combining marks) stays whole
    ("नमस्ते दुनिया", ["नमस्ते", "दुनिया"]),  # Devanagari vowel signs / virama
    ("cafe\u0301 naïve", ["caf\u00e9", "naïve"]),  # decomposed accent → NFC
    ("", []),
    ("   \n\t ", []),
])
def test_word_tokenize(text, expected):
    assert word_tokenize(text) == expected


def test_word_tokenize_keeps_every_non_space_character():
    text = "Don't <b>stop</b> 我爱猫 👨\u200d👩\u200d👧 مَرْحَبًا — ok?!"
    assert "".join(word_tokenize(text)) == "".join(text.split())


# --------------------------------------------------------------------------- batch_tokens

def test_batch_tokens_pads_and_reports_lengths():
    batch = batch_tokens(["the cat sat", "hi", "我爱猫!"])
    assert batch.tokens == (
        ("the", "cat", "sat", PAD),
        ("hi", PAD, PAD, PAD),
        ("我", "爱", "猫", "!"),
    )
    assert batch.lengths == (3, 1, 4)
    assert batch.truncated == (False, False, False)
    assert batch.max_len == 4


def test_batch_tokens_truncation_flags():
    batch = batch_tokens(["a b c d e", "a b c", "a"], max_tokens=3)
    assert batch.tokens == (("a", "b", "c"), ("a", "b", "c"), ("a", PAD, PAD))
    assert batch.lengths == (3, 3, 1)
    assert batch.truncated == (True, False, False)  # exactly max_tokens is not truncated


def test_batch_tokens_empty_inputs():
    batch = batch_tokens(["", "x"])
    assert batch.tokens == ((PAD,), ("x",))
    assert batch.lengths == (0, 1)
    empty = batch_tokens([])
    assert empty.tokens == () and empty.lengths == () and empty.max_len == 0


@pytest.mark.parametrize("kwargs, message", [({"tokenizer": "bpe"}, "'bpe'"), ({"max_tokens": 0}, "0")])
def test_batch_tokens_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        batch_tokens(["a"], **kwargs)


# --------------------------------------------------------------------------- embeddings

def test_token_vectors_deterministic_and_seeded():
    a = token_vector("cat", 16, seed=0)
    assert torch.equal(a, token_vector("cat", 16, seed=0))
    assert not torch.equal(a, token_vector("cat", 16, seed=1))
    assert not torch.equal(a, token_vector("dog", 16, seed=0))
    assert torch.equal(token_vector(PAD, 16, seed=0), torch.zeros(16))
    # independent of the global RNG
    torch.manual_seed(999)
    torch.rand(10)
    assert torch.equal(a, token_vector("cat", 16, seed=0))


def test_embed_tokens_bit_identical_across_calls():
    tokens = batch_tokens(["the cat sat", "我爱猫"]).tokens
    first = embed_tokens(tokens, 8, seed=3)
    assert first.shape == (2, 3, 8)
    assert torch.equal(first, embed_tokens(tokens, 8, seed=3))
    assert not torch.equal(first, embed_tokens(tokens, 8, seed=4))
    # same token gets the same token vector in another sentence (positions differ)
    pe = sinusoidal_positions(3, 8)
    assert torch.allclose(first[0, 1] - pe[1], token_vector("cat", 8, 3) / 2 ** 0.5, atol=1e-6)


def test_sinusoidal_positions_literal():
    pe = sinusoidal_positions(2, 4)
    expected = torch.tensor([[0.0, 1.0, 0.0, 1.0],
                             [np.sin(1.0), np.cos(1.0), np.sin(0.01), np.cos(0.01)]], dtype=torch.float32)
    assert torch.allclose(pe, expected, atol=1e-7)
    assert sinusoidal_positions(3, 5).shape == (3, 5)


# --------------------------------------------------------------------------- run_toy

def test_run_toy_is_bit_identical_across_runs():
    config = EncoderConfig(d_model=16, n_heads=4, d_ff=32, n_layers=2, seed=7)
    sentences = ["the cat sat on the mat", "我爱猫 👍🏽"]
    torch.manual_seed(1)
    first = run_toy(sentences, config, causal=True)
    torch.manual_seed(2)  # the global RNG must not matter
    torch.rand(100)
    second = run_toy(sentences, config, causal=True)
    assert first.tokens == second.tokens
    assert set(first.stages) == set(second.stages)
    assert "layers.1.attention.weights" in first.stages
    for name, array in first.stages.items():
        assert array.dtype == np.float32, name
        assert np.array_equal(array, second.stages[name]), name
        assert array.tobytes() == second.stages[name].tobytes(), name
    assert np.array_equal(first.mask, second.mask)
    other = run_toy(sentences, EncoderConfig(d_model=16, n_heads=4, d_ff=32, n_layers=2, seed=8), causal=True)
    assert not np.array_equal(first.stages["layers.0.attention.weights"], other.stages["layers.0.attention.weights"])


def test_run_toy_padding_keys_get_zero_weight():
    trace = run_toy(["a b c d", "a b"], EncoderConfig(d_model=8, n_heads=2, d_ff=16))
    weights = trace.stage("weights")  # [batch, head, query_pos, key_pos]
    assert weights.shape == (2, 2, 4, 4)
    assert np.all(weights[1, :, :, 2:] == 0)
    assert np.allclose(weights.sum(-1), 1, atol=1e-5)


def test_run_toy_no_tokens_raises():
    with pytest.raises(ValueError, match="no tokens"):
        run_toy(["", "  "], EncoderConfig(d_model=8, n_heads=2, d_ff=16))
