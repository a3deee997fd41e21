"""Head-type scores against TransformerLens's ``head_detector``.

The reference is written here from TransformerLens's documented definition (``detect_head``, the package need
not be installed): the detection patterns of ``get_previous_token_head_detection_pattern``,
``get_duplicate_token_head_detection_pattern`` and ``get_induction_head_detection_pattern`` (lower-triangular;
the induction pattern is the duplicate pattern rolled one column right, column 0 zeroed), and the score of
``compute_head_attention_similarity_score``: with error measure ``"mul"`` (the default) "multiplies both tensors
element-wise and divides the sum of the result by the sum of the attention pattern", after ``exclude_bos``
zeroes the pattern's column 0 and ``exclude_current_token`` its diagonal; a list of sequences gives the mean
score over them. (``"abs"`` — 1 − Σ|A − D| / n, rounded to 3 decimals — is a different measure the app does not
show.) The old definition divided by the rows that have a target only; these tests fail on it (by up to 0.22 on
the repeated sequence below).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_core.analysis.head_types import DEFINITIONS, detection_pattern, detection_score, head_types

REPEATED = [5, 17, 3, 9, 22, 41, 60, 2, 5, 17, 3, 9, 22, 41, 60, 2]  # a period of 8, repeated once


def tl_pattern(name: str, tokens: torch.Tensor) -> torch.Tensor:
    """TransformerLens's ``get_<name>_detection_pattern`` for one sequence ``tokens [pos]`` (float, tril)."""
    n = tokens.shape[-1]
    if name == "previous_token_head":
        d = torch.zeros(n, n)
        d[1:, :-1] = torch.eye(n - 1)
        return torch.tril(d)
    grid = tokens.repeat(n, 1).numpy()
    eq = np.equal(grid, grid.T).astype(int)
    np.fill_diagonal(eq, 0)
    duplicate = torch.tril(torch.as_tensor(eq).float())
    if name == "duplicate_token_head":
        return duplicate
    assert name == "induction_head"
    shifted = torch.roll(duplicate, shifts=1, dims=1)
    return torch.tril(torch.cat((torch.zeros(n, 1), shifted[:, 1:]), dim=1))


def tl_score(pattern: torch.Tensor, detection: torch.Tensor, *, exclude_bos=False, exclude_current_token=False,
             error_measure="mul") -> float:
    """``compute_head_attention_similarity_score`` as documented (``pattern [q, k]``, a copy is changed)."""
    a = pattern.clone().double()
    if error_measure == "mul":
        if exclude_bos:
            a[:, 0] = 0
        if exclude_current_token:
            a.fill_diagonal_(0)
        return float((a * detection).sum() / a.sum())
    diff = (a - detection).abs()
    if exclude_bos:
        diff[:, 0] = 0
    if exclude_current_token:
        diff.fill_diagonal_(0)
    return 1 - round(float(diff.mean() * len(diff)), 3)


OURS = {"previous_token_head": "previous_token", "duplicate_token_head": "duplicate_token",
        "induction_head": "induction"}


@pytest.fixture(scope="session")
def causal_trace():
    from transformer_core.models.causal import run_causal

    return run_causal(REPEATED)


def test_patterns_are_transformer_lens_patterns():
    tokens = torch.tensor(REPEATED)
    strings = [str(t) for t in REPEATED]
    for name, kind in OURS.items():
        np.testing.assert_array_equal(detection_pattern(kind, strings), tl_pattern(name, tokens).numpy().astype(bool))


@pytest.mark.parametrize("name", sorted(OURS))
def test_causal_model_scores_equal_head_detector(causal_trace, name):
    table = head_types(causal_trace, 0, (OURS[name],))  # the default definition
    detection = tl_pattern(name, torch.tensor(REPEATED)).double()
    for layer in range(causal_trace.n_layers):
        weights = torch.tensor(causal_trace.stage("weights", layer)[0])  # [head, q, k]
        expected = [tl_score(weights[h], detection) for h in range(weights.shape[0])]
        np.testing.assert_allclose(table[table.layer == layer][OURS[name]], expected, atol=1e-6)


def test_exclude_options_follow_head_detector(causal_trace):
    weights = causal_trace.stage("weights", 1)[0]  # [head, q, k]
    strings = [str(t) for t in REPEATED]
    for name, kind in OURS.items():
        detection = tl_pattern(name, torch.tensor(REPEATED)).double()
        for bos in (False, True):
            for current in (False, True):
                ours = detection_score(weights, detection_pattern(kind, strings), exclude_bos=bos,
                                       exclude_current_token=current)
                expected = [tl_score(torch.tensor(w), detection, exclude_bos=bos, exclude_current_token=current)
                            for w in weights]
                np.testing.assert_allclose(ours, expected, atol=1e-6)


def test_minilm_previous_token_and_self_equal_head_detector_formula():
    """An encoder looks ahead too; the "mul" formula is the same, with a custom (tril) pattern for self."""
    from transformer_core.models.minilm_trace import run_minilm

    trace = run_minilm(["the cat sat on the mat because it was warm"], only=lambda n: n.endswith(".weights"))
    table = head_types(trace, 0, ("previous_token", "self"))
    n = trace.lengths[0]
    for layer in range(trace.n_layers):
        weights = torch.tensor(trace.stage("weights", layer)[0, :, :n, :n])
        for kind, detection in (("previous_token", tl_pattern("previous_token_head", torch.arange(n))),
                                ("self", torch.eye(n))):
            expected = [tl_score(w, detection.double()) for w in weights]
            np.testing.assert_allclose(table[table.layer == layer][kind], expected, atol=1e-6)


def test_rows_with_target_is_a_named_variant(causal_trace):
    assert set(DEFINITIONS) == {"transformer_lens", "rows_with_target"}
    tl = head_types(causal_trace, 0, ("previous_token",))["previous_token"].to_numpy()
    rows = head_types(causal_trace, 0, ("previous_token",), definition="rows_with_target")["previous_token"]
    n = len(REPEATED)
    np.testing.assert_allclose(tl, rows.to_numpy() * (n - 1) / n, atol=1e-6)  # full causal rows: row 0 has no target
