"""The masks lab's and the pipeline's numbers (transformer_core.analysis.masks_lab) on literal scores whose softmax
is worked out by hand: equal scores give each visible key 1 / (number of visible keys)."""
from __future__ import annotations

import numpy as np
import pytest

from transformer_core.analysis import masks_lab as ml
from transformer_core.nn.config import EncoderConfig
from transformer_core.records.trace import Trace

THIRD, HALF = 1 / 3, 0.5


def flat(tokens: tuple[str, ...], length: int) -> Trace:
    """One sentence, one head, every raw score 0."""
    n = len(tokens)
    return Trace(tokens=(tokens,), lengths=(length,), truncated=(False,), mask=None,
                 stages={"layers.0.attention.scores": np.zeros((1, 1, n, n), np.float32)})


PADDED = flat(("a", "b", "[PAD]"), 2)


def test_mask_gallery_by_hand():
    g = ml.mask_gallery(PADDED, 0, 0)
    np.testing.assert_allclose(g["causal"]["weights"], [[1, 0, 0], [HALF, HALF, 0], [THIRD, THIRD, THIRD]], rtol=1e-6)
    np.testing.assert_allclose(g["padding"]["weights"], [[HALF, HALF, 0]] * 3, rtol=1e-6)
    np.testing.assert_allclose(g["both"]["weights"], [[1, 0, 0], [HALF, HALF, 0], [HALF, HALF, 0]], rtol=1e-6)
    assert g["both"]["mask"].tolist() == [[True, False, False], [True, True, False], [True, True, False]]


def test_keys_vs_queries_by_hand():
    kq = ml.keys_vs_queries(PADDED, 0, 0)
    keys, queries, both = kq["keys"], kq["queries"], kq["keys and queries"]
    assert (keys["pad_weight"], keys["empty_rows"], keys["nan_rows"]) == (0.0, 0, 0)
    # hidden on query rows only: a real query still gives [PAD] a third, and the [PAD] row is empty (NaN in seed 000)
    assert queries["pad_weight"] == pytest.approx(THIRD) and (queries["empty_rows"], queries["nan_rows"]) == (1, 1)
    assert queries["real_rows_diff"] == pytest.approx(THIRD)  # [1/3, 1/3, 1/3] against [1/2, 1/2, 0]
    np.testing.assert_allclose(queries["weights"], [[THIRD] * 3, [THIRD] * 3, [0, 0, 0]], rtol=1e-6)
    assert np.isnan(both["seed000"][2]).all() and both["weights"][2].tolist() == [0, 0, 0]
    assert both["real_rows_diff"] == 0.0


def test_conventions_on_a_blocked_first_row():
    c = ml.conventions(PADDED, 0, 0, empty_row=0, d_model=8, n_heads=2, seed=0)
    assert c["ordinary"].tolist() == [False, True, True] and set(c["diffs"].values()) == {0.0}
    assert np.isnan(c["weights"]["seed 000"][0]).all()  # -inf fill: 0/0
    np.testing.assert_allclose(c["weights"]["seed 001"][0], [THIRD] * 3, rtol=1e-6)  # -1e9 fill: uniform
    assert c["weights"]["ours"][0].tolist() == [0, 0, 0]
    assert c["half"]["-1e9"].startswith("RuntimeError") and c["half"]["float('-inf')"].startswith("ok, float16")
    assert c["module"][0] is True


def test_window_with_a_sink_by_hand():
    w = ml.window(flat(tuple("abcd"), 4), 0, 0, width=2, sinks=1)
    assert w["mask"].astype(int).tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 0, 1, 1]]
    np.testing.assert_allclose(w["first"], [1, HALF, THIRD, THIRD], rtol=1e-6)  # query 2 sees 0, 1, 2 (0 twice)
    np.testing.assert_allclose(w["first_no_sinks"], [1, HALF, 0, 0], rtol=1e-6)


def test_prefix_and_dropout_on_a_toy_run():
    from transformer_core import run_toy

    config = EncoderConfig(d_model=16, n_heads=2, d_ff=64, seed=0)
    trace = run_toy(["the cat sat on the mat", "a dog"], config, causal=False, padding=False)
    res = ml.prefix(trace, 0, 1, n_new=2)
    # the new queries aligned bottom-right equal the full causal run's last rows; top-left (is_causal's) does not
    assert res["max_diff"]["bottom-right"] <= 1e-6 < res["max_diff"]["top-left"] and res["square_equal"] is True
    off = ml.dropout(trace, 1, 0, EncoderConfig(d_model=16, n_heads=2, d_ff=64, dropout=0.5, seed=0), True, True,
                     training=False, dropout_seed=1)
    np.testing.assert_array_equal(off["after"], off["before"])  # eval mode: no dropout
    np.testing.assert_allclose(off["sum_before"], 1.0, rtol=1e-6)
    assert off["zeroed"] == 0 and off["kept"] == int((off["before"] > 0).sum())
    on = ml.dropout(trace, 1, 0, EncoderConfig(d_model=16, n_heads=2, d_ff=64, dropout=0.5, seed=0), True, True,
                    training=True, dropout_seed=1)
    kept = on["after"] > 0  # survivors are scaled by 1 / (1 − p)
    np.testing.assert_allclose(on["after"][kept], 2 * on["before"][kept], rtol=1e-6)
    assert on["zeroed"] == int(((on["after"] == 0) & (on["before"] > 0)).sum()) > 0


def test_pipeline_checks_by_hand():
    steps = {"ff_linear": np.array([1.0, 2.0]), "ff_conv1d": np.array([1.0, 2.5]), "dropped": np.ones(3),
             "projected": np.ones(3), "ff_hidden": np.array([0.0, 1.0, 0.0, 3.0])}
    assert ml.walkthrough_checks(steps) == {"conv_diff": 0.5, "dropout_diff": 0.0, "relu_zero": 0.5}
    a = {"attn_output": np.zeros((1, 2, 2)), "weights": np.array([[[[1, 0], [0, 1]], [[0, 1], [1, 0]]]]),
         "mask": np.array([[True, False], [True, True]])}
    b = {"attn_output": np.full((1, 2, 2), 0.25), "weights": np.full((1, 2, 2, 2), 0.5),
         "mask": np.array([[True, True], [True, True]])}
    diff = ml.compare_steps(a, b)
    assert diff["max_output_diff"] == 0.25 and diff["visible"].all()
    np.testing.assert_allclose(diff["mean_weights_diff"], np.zeros((2, 2)))  # both average to 1/2 everywhere
    assert ml.max_abs(np.zeros(0), np.zeros(0)) == 0.0
