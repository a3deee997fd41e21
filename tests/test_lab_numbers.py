"""Numbers moved out of the "Attention since 2017" and SmolLM2 page rooms into transformer_core: the online-softmax
lab (against torch's scaled_dot_product_attention), the positions tab's numbers, and the token choices of "What the
heads write" (cosine of literal unembedding rows, byte-piece labels)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer_core.analysis import online_lab, positions_lab, token_choices


@pytest.mark.parametrize("kind", online_lab.MASKS)
def test_online_demo_equals_torch_sdpa(kind):
    out = online_lab.online_demo(7, 2, 3, kind, seed=4)
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(7, 8, generator=g) * s for s in (2.0, 2.0, 1.0))
    mask = online_lab.lab_mask(kind, 7)
    reference = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=mask)[0].numpy()
    np.testing.assert_allclose(out["final"], reference, atol=1e-5)
    np.testing.assert_allclose(out["scores"], (q @ k.T).numpy() / np.sqrt(8), rtol=1e-6)
    assert out["diff"] <= 1e-5 < out["diff_wrong"]  # without the rescale the tiles' sums are wrong
    assert out["computed"] + out["skipped"] == 4 * 3 == len(out["steps"])  # ⌈7/2⌉ × ⌈7/3⌉ tiles
    assert out["visible"].tolist() == (np.ones((7, 7), bool) if mask is None else mask.numpy()).tolist()
    if kind == "causal":
        assert out["skipped"] == 4  # tiles wholly above the diagonal: q 0–1 with k 3–5 and k 6, q 2–3 and q 4–5 with k 6


def test_positions_tab_numbers():
    tokens = tuple(f"w{i}" for i in range(20))
    out = positions_lab.tab_numbers(tokens, alibi_head=3, query=5, key=2)
    assert out["tokens"] == tokens[:16] and out["slope"] == 2 ** -4  # ALiBi, 8 heads: head h has 2^-(h+1)
    low, high = out["range"]
    for scheme in positions_lab.SCHEMES:
        assert out["scores"][scheme].shape == (16, 16)
        assert low <= out["scores"][scheme].min() and out["scores"][scheme].max() <= high
    assert out["row0_ratio"] == positions_lab.row0_ratio() > 1  # MiniLM's first position row stands out
    with pytest.raises(IndexError):
        positions_lab.tab_numbers(tokens[:3], alibi_head=0, query=5, key=0)


def test_nearest_by_unembedding_on_literal_rows():
    w_u = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [-1.0, 0.0]])
    # cosines: 0–1 0.994, 1–2 0.110, 2–3 0, 1–3 −0.994; id 0 is not a candidate
    assert token_choices.nearest_by_unembedding(w_u, [0, 1, 2, 3], {1, 2, 3}) == {0: 1, 1: 2, 2: 1, 3: 2}
    assert token_choices.nearest_by_unembedding(w_u, [0, 1], {0}) == {0: None, 1: 0}
    assert token_choices.offered([5, 3], [3, 7, 3]) == ([5, 3, 7], [3, 7])


def test_byte_piece_labels():
    assert token_choices.readable("␣Mary") == "␣Mary" and token_choices.short_label("␣Mary") == "␣Mary"
    assert token_choices.readable("<0xE4><0xBB>") == "<0xE4><0xBB> (part of a character)"
    assert token_choices.short_label("<0xE4><0xBB>") == "‹bytes›"
    assert token_choices.short_label(token_choices.readable("<0xE4>")) == "‹bytes›"
