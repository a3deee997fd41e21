"""SmolLM2's sampled generation filters top-k and top-p in Hugging Face's order (the app's default):
each drawn token's probability is the one ``TemperatureLogitsWarper`` → ``TopKLogitsWarper`` → ``TopPLogitsWarper``
→ softmax give on the same logits (transformers imported here only). ``order="both"`` stays a named variant."""
from __future__ import annotations

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from transformer_core.analysis.predictions import sampling_probs, softmax_t  # noqa: E402


def _model():
    from transformer_core.models.gguf_weights import SmolLM2Unavailable
    from transformer_core.models.smollm2 import load_smollm2

    try:
        return load_smollm2()
    except SmolLM2Unavailable as err:
        pytest.skip(str(err))


def hf_dist(logits: torch.Tensor, t: float, k: int | None, p: float | None) -> np.ndarray:
    scores = logits.double()[None]  # [1, vocab]
    ids = torch.zeros(1, 1, dtype=torch.long)
    scores = transformers.TemperatureLogitsWarper(t)(ids, scores)
    if k is not None:
        scores = transformers.TopKLogitsWarper(top_k=k)(ids, scores)
    if p is not None:
        scores = transformers.TopPLogitsWarper(top_p=p)(ids, scores)
    return torch.softmax(scores, dim=-1)[0].numpy()


@pytest.mark.parametrize("t, k, p", [(0.7, 20, 0.8), (1.0, 5, 0.5), (1.5, 50, 0.9), (1.0, None, 0.6),
                                     (0.5, 3, None)])
def test_each_step_draws_from_hugging_faces_filtered_distribution(t, k, p):
    from transformer_core.analysis.generation import generate

    model, tokenizer = _model()
    out = generate("When Mary and John went to the store, John gave a drink to", 6, greedy=False, temperature=t,
                   k=k, p=p, seed=3, stop_at_eos=False)
    ids = out["ids"]
    with torch.no_grad():
        logits = model(torch.tensor([ids[:-1]]))[0]  # [pos, vocab]: position i predicts ids[i + 1]
    for step, pos in zip(out["steps"], range(out["n_prompt"] - 1, len(ids) - 1)):
        expected = hf_dist(logits[pos], t, k, p)
        ours = sampling_probs(softmax_t(logits[pos], t), k, p)
        assert set(np.flatnonzero(ours > 0)) == set(np.flatnonzero(expected > 0))
        np.testing.assert_allclose(ours, expected, atol=1e-6)
        assert expected[step["id"]] > 0  # the token drawn is one Hugging Face keeps
        assert step["chosen_prob"] == pytest.approx(float(expected[step["id"]]), abs=1e-5)


def test_both_order_is_a_named_variant_and_bad_order_refused():
    from transformer_core.analysis.generation import generate

    _model()
    prompt = "The capital of France is"
    hf = generate(prompt, 3, greedy=False, k=5, p=0.5, seed=1, stop_at_eos=False)
    again = generate(prompt, 3, greedy=False, k=5, p=0.5, seed=1, stop_at_eos=False, order="hf")
    assert hf["new_ids"] == again["new_ids"]  # "hf" is the default
    both = generate(prompt, 3, greedy=False, k=5, p=0.5, seed=1, stop_at_eos=False, order="both")
    assert len(both["new_ids"]) == 3
    with pytest.raises(ValueError, match="order"):
        generate(prompt, 1, greedy=False, k=5, p=0.5, order="pk")
