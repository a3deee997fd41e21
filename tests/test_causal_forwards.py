"""The causal page runs its model only as often as the numbers it shows need (compute once per input, serve every
click from it): the model's forward calls counted by ``ui/shell/diagnostics.count_forwards`` (``AE_DIAGNOSTICS=1``)
while AppTest opens the page, and the ablation's numbers checked against an independent reference.

A first open shows the trace of the sequence (1 forward), a seeded sample of 16 tokens (16 steps without a KV cache,
then 1 run for the loss line) and the induction-accuracy curve of every checkpoint, intact and with layer 1's heads
ablated (one forward per checkpoint: both in one batch). It ran 42 forwards when intact and ablated were two.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from apptest_utils import decode, figures, new_app

from transformer_core.models.causal import load_causal_model, repeated_tokens, training_log


def forwards() -> int:
    from ui.shell import diagnostics

    return diagnostics.heap_report()["forwards"].get("causal", 0)


def reference_accuracy(step: int, heads: tuple[int, ...]) -> float:
    """Induction accuracy on the 64 held-out sequences (period 24, seed 12345) with layer 1's ``heads`` zeroed, by a
    forward pre-hook on W_O that zeroes each head's slice of its input (not the app's ablation code)."""
    model = load_causal_model(step)
    ids = repeated_tokens(64, 24, 48, 64, torch.Generator().manual_seed(12345))
    d = model.config.d_model // model.config.n_heads

    def zero(module, args):
        x = args[0].clone()
        for h in heads:
            x[..., h * d:(h + 1) * d] = 0.0
        return (x,)

    hook = model.layers[1].attention.W_O.register_forward_pre_hook(zero)
    try:
        with torch.no_grad():
            logits = model(ids)
    finally:
        hook.remove()
    hit = (logits[:, :-1].argmax(-1) == ids[:, 1:]).float()  # entry t predicts token t + 1
    return float(hit[:, 23:].mean())  # targets in the repeat


@pytest.mark.filterwarnings("ignore:`torch.distributed.reduce_op` is deprecated:FutureWarning")  # heap_report's gc scan
def test_the_first_open_runs_the_model_once_per_shown_result_and_clicks_reuse_what_it_computed(monkeypatch):
    monkeypatch.setenv("AE_DIAGNOSTICS", "1")
    at = new_app()
    before = forwards()
    at.switch_page("pages/causal.py").run()
    assert not at.exception, [e.value for e in at.exception]
    steps = training_log()["checkpoint_steps"]
    assert forwards() - before == 1 + (16 + 1) + len(steps) == 30  # was 42: intact and ablated, one run each
    # the curve's numbers: every checkpoint intact and with L1H0–L1H3 zeroed, as the model gives them
    curve = next(f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == "ablation_causal")
    intact, ablated = (np.asarray(decode(t["y"]), float) for t in curve["data"][:2])
    np.testing.assert_allclose(intact, [reference_accuracy(s, ()) for s in steps], atol=1e-9, rtol=0)
    np.testing.assert_allclose(ablated, [reference_accuracy(s, (0, 1, 2, 3)) for s in steps], atol=1e-9, rtol=0)
    assert intact[-1] == pytest.approx(0.885, abs=1e-3) and ablated[-1] < 0.05
    # a click that changes only the view is served from what the open computed
    before = forwards()  # (the references above ran the model too)
    at.slider(key="causal_pred_pos").set_value(10).run()
    assert not at.exception and forwards() == before
    # other heads: the intact numbers are known, so only the ablated copy runs, once per checkpoint
    at.multiselect(key="causal_ablate").set_value(["L0H0"]).run()
    assert not at.exception and forwards() - before == len(steps)
    curve = next(f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == "ablation_causal")
    np.testing.assert_allclose(np.asarray(decode(curve["data"][0]["y"]), float), intact, atol=0, rtol=0)

