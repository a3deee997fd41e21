"""The causal page ranks its heads: each one ablated alone at the chosen checkpoint, by induction accuracy on the 64
held-out repeated sequences. Every bar equals an independent reference (a forward pre-hook on that layer's W_O that
zeroes the head's slice of its input, not the app's ablation code). The box computes nothing until it is opened:
tests/test_causal_forwards.py pins a first open (box closed) at 30 forward calls, and the ranking would add 3."""
from __future__ import annotations

import numpy as np
import torch
from apptest_utils import decode, figures, new_app

from transformer_core.models.causal import load_causal_model, repeated_tokens


def accuracy_without(step: int, layer: int, head: int) -> float:
    """Induction accuracy of checkpoint ``step`` with one head's context zeroed before W_O (a hook)."""
    model = load_causal_model(step)
    ids = repeated_tokens(64, 24, 48, 64, torch.Generator().manual_seed(12345))
    d = model.config.d_model // model.config.n_heads

    def zero(module, args):
        x = args[0].clone()
        x[..., head * d:(head + 1) * d] = 0.0
        return (x,)

    hook = model.layers[layer].attention.W_O.register_forward_pre_hook(zero)
    try:
        with torch.no_grad():
            logits = model(ids)
    finally:
        hook.remove()
    return float((logits[:, :-1].argmax(-1) == ids[:, 1:]).float()[:, 23:].mean())  # targets in the repeat


def _rank_figure(at):
    return next((f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == "ablation_rank_induction"),
                None)


def test_each_head_ablated_alone_is_the_hooked_models_accuracy_and_the_caption_names_the_largest_fall():
    at = new_app(rank="1")
    at.switch_page("pages/causal.py").run(timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    fig = _rank_figure(at)
    assert fig is not None, "the ranking box is open (?rank=1) but draws no ranking"
    step = fig["layout"]["meta"]["step"]
    names, shown = fig["data"][0]["y"], np.asarray(decode(fig["data"][0]["x"]), float)
    assert sorted(names) == [f"L{lay}H{h}" for lay in range(2) for h in range(4)]
    expected = [accuracy_without(step, int(n[1]), int(n[3])) for n in names]
    np.testing.assert_allclose(shown, expected, atol=1e-9, rtol=0)
    assert list(shown) == sorted(shown)  # the largest fall first
    said = next(c.value for c in at.caption if c.value.startswith("Ablated alone"))
    assert said.startswith(f"Ablated alone, {names[0]} lowers induction accuracy most"), said
    assert f"→ {shown[0]:.1%}, then {names[1]}, → {shown[1]:.1%}" in said, said  # the bars' own numbers



def test_before_training_the_caption_does_not_claim_a_head_lowers_accuracy():
    from ui.causal.ablation import _ranked

    at = new_app(rank="1", checkpoint="0")
    at.switch_page("pages/causal.py").run(timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    assert _rank_figure(at)["layout"]["meta"]["step"] == 0
    ranked = _ranked(0, "zero", None)
    fall = ranked["intact"]["accuracy"]["repeat"] - ranked["accuracy"]
    said = next(c.value for c in at.caption if c.value.startswith("Ablated alone"))
    acc = ranked["accuracy"].ravel()
    order = np.argsort(-fall, axis=None, kind="stable")
    if fall.max() < 0.01:  # under a point: noise at an untrained checkpoint
        assert said.startswith("Ablated alone, no head lowers induction accuracy by a point or more"), said
    elif fall.ravel()[order[1]] < 0.01:
        assert said.startswith("Ablated alone, only") and f"{acc[order[0]]:.1%}" in said, said
    else:
        assert "most" in said and all(f"{acc[i]:.1%}" in said for i in order[:2]), said


def test_the_ranking_stays_readable_before_training_when_every_bar_is_at_chance():
    """At step 0 every bar and both lines sit at ~1.6 %: the labels go outside the bars and the two lines share one
    label (centred on each line they wrote over each other, and inside 10-pixel bars they were white smudges)."""
    from transformer_core.figures.ablation import rank_induction_figure

    def labels(fig):  # the lines' labels, above the bars
        return [a.text for a in fig.layout.annotations if a.yref == "y domain"]

    def bar_labels(fig):  # inside the bars, or beside them right of both lines
        return {**dict(zip(fig.data[0].y, fig.data[0].text)),
                **{a.y: (a.text, a.x) for a in fig.layout.annotations if a.yref != "y domain"}}

    early = rank_induction_figure(np.array([[0.014, 0.016, 0.015, 0.016], [0.013, 0.016, 0.018, 0.016]]),
                                  intact=0.0156, chance=1 / 64, step=0, mode="zero")
    assert labels(early) == ["intact 1.6% · chance 1.6%"], labels(early)
    assert bar_labels(early)["L1H2"] == ("1.8%", 0.018) and bar_labels(early)["L0H0"] == ("1.4%", 1 / 64)
    trained = rank_induction_figure(np.array([[0.238, 0.883, 0.875, 0.867], [0.861, 0.866, 0.887, 0.859]]),
                                    intact=0.885, chance=1 / 64, step=4000, mode="zero")
    assert sorted(labels(trained)) == ["chance 1.6%", "intact 88.5%"], labels(trained)
    assert bar_labels(trained)["L0H0"] == "23.8%"  # in its bar
