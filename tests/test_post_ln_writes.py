"""What the trained causal model's heads write (transformer_core.analysis.post_ln_writes): the logit lens's last row
is the model's own output and its first the embeddings through W_U computed here by hand; the direct attributions sum
to the model's own logit of the next token (minus the mean logit), so no part is missed or counted twice; the
induction heads of layer 1 write the next token on the repeat and not on the first period; the causal page draws
the same numbers from its one run (AppTest, no extra forward call)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from apptest_utils import decode, figures, new_app
from transformer_core.analysis import post_ln_writes
from transformer_core.models.causal import load_causal_model, repeated_tokens, run_causal

PERIOD = 12


@pytest.fixture(scope="module")
def run():
    ids = [int(i) for i in repeated_tokens(1, PERIOD, 2 * PERIOD, 64, torch.Generator().manual_seed(5))[0]]
    return ids, run_causal(ids), load_causal_model()


def test_lens_ends_on_the_model_output_and_starts_on_the_embeddings(run):
    ids, trace, model = run
    lens = post_ln_writes.logit_lens(model, trace)
    nxt = torch.tensor(ids[1:])
    own = torch.softmax(torch.from_numpy(trace.stages["logits"][0, :-1]), -1).gather(-1, nxt[:, None])[:, 0]
    np.testing.assert_allclose(lens["target_prob"][-1], own.numpy(), atol=1e-6)
    emb = model.token_embedding.weight[ids[:-1]] + model.position_embedding.weight[:len(ids) - 1]
    by_hand = torch.softmax(emb @ model.unembed.weight.T + model.unembed.bias, -1).gather(-1, nxt[:, None])[:, 0]
    np.testing.assert_allclose(lens["target_prob"][0], by_hand.detach().numpy(), atol=1e-6)


def test_attributions_sum_to_the_model_logit_and_induction_heads_write_the_repeat(run):
    _ids, trace, model = run
    out = post_ln_writes.direct_logit_attribution(model, trace)
    np.testing.assert_allclose(out["total"], out["logit_diff"], atol=1e-4)
    repeat, first = out["heads"][PERIOD:], out["heads"][:PERIOD - 1]
    induction = repeat[:, 1].mean(0)  # layer 1's heads, mean over the repeat's positions
    assert induction.max() > 1.0 and (induction > 1.0).sum() >= 3
    assert first[:, 1].mean(0).max() < 0.5 * induction.max()


def test_an_unfrozen_norm_would_not_sum(run, monkeypatch):
    # the check above can fail: a part carried through a norm that recomputes its own scale misses the logit
    _ids, trace, model = run
    real = torch.Tensor.var

    def own_scale(self, *args, **kwargs):
        return real(self, *args, **kwargs) * 1.1

    monkeypatch.setattr(torch.Tensor, "var", own_scale)
    out = post_ln_writes.direct_logit_attribution(model, trace)
    assert np.abs(out["total"] - out["logit_diff"]).max() > 1e-2


def test_the_causal_page_draws_them_from_its_one_run(run):
    from transformer_core.models import causal

    ids, _trace, _model = run
    model = causal.load_causal_model()
    at = new_app(seq=" ".join(map(str, ids)))
    at.switch_page("pages/causal.py").run(timeout=300)
    assert not at.exception, [e.message for e in at.exception]
    dla = next(f for f in figures(at) if f["layout"].get("meta", {}).get("view") == "dla")
    z = np.asarray(decode(dla["data"][0]["z"]), float)  # [row, pos]: 8 heads, embeddings, biases
    trace = run_causal(ids)
    calls = []  # any checkpoint's model
    handle = torch.nn.modules.module.register_module_forward_pre_hook(
        lambda module, _args: calls.append(1) if isinstance(module, causal.CausalLM) else None)
    try:
        out = post_ln_writes.direct_logit_attribution(model, trace)
        post_ln_writes.logit_lens(model, trace)
    finally:
        handle.remove()
    assert not calls  # both read the page's captured run and the weights: no model run
    np.testing.assert_allclose(z[:8], out["heads"].reshape(len(ids) - 1, 8).T, atol=1e-5)
    assert any("On the repeat" in m.value for m in at.markdown)
