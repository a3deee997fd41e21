"""The causal page's measures of one sequence (transformer_core.analysis.causal_sequence) and its loss curve
(transformer_core.figures.loss_curve), on literal matrices whose answers are worked out by hand."""
from __future__ import annotations

import numpy as np
import pytest

from transformer_core.analysis import causal_sequence as cs
from transformer_core.figures.loss_curve import loss_curve_figure
from transformer_core.records.trace import Trace

PREVIOUS = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], np.float32)  # row 0 has only key 0
UNIFORM = np.tril(np.ones((4, 4), np.float32)) / np.arange(1, 5, dtype=np.float32)[:, None]  # 1/(q+1) on keys ≤ q


def trace_of(*heads: np.ndarray, token_loss=None) -> Trace:
    """One layer, one sentence, the given heads' weights [query_pos, key_pos]."""
    n = heads[0].shape[0]
    stages = {"layers.0.attention.weights": np.stack(heads)[None]}  # [batch, head, query_pos, key_pos]
    if token_loss is not None:
        stages["token_loss"] = np.asarray(token_loss, np.float32)[None]
    return Trace(tokens=(tuple(map(str, range(n))),), lengths=(n,), truncated=(False,), mask=None, stages=stages)


@pytest.mark.parametrize("ids, period", [([1, 2, 1, 2, 1], 2), ([7, 7, 7], 1), ([1, 2, 3, 1], None),
                                         ([1, 2, 3, 1, 2], 3), ([4], None), ([], None), ([5, 6], None)])
def test_detect_period(ids, period):
    assert cs.detect_period(ids) == period


def test_a_repeated_sequence_repeats_its_period():
    ids = cs.repeated_sequence(3, seed=0, length=7)
    assert len(ids) == 7 and ids[3:] == ids[:4] and cs.detect_period(ids) == 3
    assert cs.repeated_sequence(3, seed=0, length=7) == ids  # seeded: the same every time
    assert len(cs.repeated_sequence(30, seed=1)) == 48  # twice the period, cut at the model's 48 positions
    assert len(cs.repeated_sequence(16, seed=1)) == 32 and all(0 <= i < 64 for i in cs.repeated_sequence(16, 1, 32))


def test_head_scores_by_hand():
    scores = cs.sequence_scores(trace_of(PREVIOUS, UNIFORM), period=2)
    # previous-token: mean of w[q, q−1] over q = 1..3; the uniform head: (1/2 + 1/3 + 1/4) / 3
    np.testing.assert_allclose(scores["previous_token"][0], [1.0, 13 / 36], rtol=1e-6)
    # induction, period 2: key = query − 1 over queries 2..3: (1/3 + 1/4) / 2
    np.testing.assert_allclose(scores["induction"][0], [1.0, 7 / 24], rtol=1e-6)
    assert cs.sequence_scores(trace_of(PREVIOUS), period=3)["induction"] == [[None]]  # one repeated token only
    assert cs.sequence_scores(trace_of(PREVIOUS), period=None)["induction"] == [[None]]
    one = cs.sequence_scores(trace_of(np.ones((1, 1), np.float32)), period=None)
    assert one == {"previous_token": [[None]], "induction": [[None]]}  # no NaN for a one-token sequence


def test_losses_by_hand():
    trace = trace_of(PREVIOUS, token_loss=[1.0, 2.0, 3.0])  # entry t predicts token t + 1
    assert cs.loss_summary(trace, 2) == {"all": 2.0, "first": 1.0, "repeat": 2.5}
    assert cs.loss_summary(trace, 1) == {"all": 2.0, "first": None, "repeat": 2.0}
    assert cs.loss_summary(trace, None) == {"all": 2.0}
    assert cs.loss_summary(trace, 4) == {"all": 2.0}  # a period longer than the predictions: no split
    assert cs.loss_summary(trace_of(np.ones((1, 1), np.float32), token_loss=[]), None) == {"all": None}


def test_future_share_by_hand():
    assert cs.future_share(trace_of(PREVIOUS, UNIFORM)) == 0.0  # causal: nothing after the query
    full = np.full((4, 4), 0.25, np.float32)  # every key: 3/4, 2/4, 1/4, 0 of each row lies after the query
    assert cs.future_share(trace_of(full)) == pytest.approx(0.375)
    assert cs.future_share(trace_of(full, PREVIOUS)) == pytest.approx(0.1875)  # the mean over heads


def test_loss_curve_figure():
    fig = loss_curve_figure(np.arange(60.0), step=30)
    raw, smooth = fig.data
    assert list(raw.y) == list(range(60)) and smooth.x[0] == 49 and len(smooth.y) == 11
    assert smooth.y[0] == pytest.approx(24.5) and smooth.y[-1] == pytest.approx(34.5)  # mean of 0..49, of 10..59
    assert fig.layout.meta == {"stage": "loss_curve", "step": 30} and fig.layout.shapes[0].x0 == 30
    assert raw.name == "loss per step" and loss_curve_figure(np.arange(60.0), 30, "zh").data[0].name != raw.name
    with pytest.raises(ValueError):
        loss_curve_figure(np.arange(10.0), step=3)
