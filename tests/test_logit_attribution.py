"""What the heads write, against Hugging Face's LlamaForCausalLM (eager, float32, the same GGUF) with forward hooks:
direct logit attribution per head and MLP, the logit lens, and activation patching of heads and residual positions.

The reference is computed here from Hugging Face's own tensors (o_proj's input split per head, each MLP's output, the
final norm's input), not from our modules. Each test also shows it can fail: a wrong head slice, an unfrozen norm, a
lens without the final norm, and patching from the wrong run all give other numbers."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from hf_parts import hf_parts

CLEAN = "When Mary and John went to the store, John gave a drink to"
CORRUPT = "When Mary and John went to the store, Mary gave a drink to"  # the names swapped where the answer hangs


@pytest.fixture(scope="module")
def ours(smollm2_or_skip):
    from transformer_core.models.smollm2 import encode, load_smollm2
    from transformer_core.models.smollm2_trace import run_smollm2

    model, tokenizer = load_smollm2()
    _trace, prediction = run_smollm2(CLEAN, residuals=True, only=lambda n: False)
    ids = {name: encode(text, tokenizer)[0] for name, text in (("clean", CLEAN), ("corrupt", CORRUPT))}
    mary, john = (tokenizer.encode(t, add_special_tokens=False).ids[0] for t in (" Mary", " John"))
    return model, prediction, ids, mary, john


def test_direct_logit_attribution_equals_hugging_faces_and_sums_to_the_logit_difference(ours, smollm2_hf):
    from transformer_core.analysis.logit_attribution import direct_logit_attribution, head_outputs

    model, prediction, ids, mary, john = ours
    hf, _tokenizer = smollm2_hf
    ref = hf_parts(hf, ids["clean"])
    parts = prediction["parts"]
    dla = direct_logit_attribution(model, {**parts, "heads": head_outputs(model, parts["contexts"])}, mary, john)
    # the reference, written out: frozen 1/rms of the final residual, the norm's weight, W_U[Mary] − W_U[John]
    scale = 1 / np.sqrt(np.mean(ref["final"] ** 2) + hf.config.rms_norm_eps)
    w_u = hf.lm_head.weight.double().numpy()
    direction = (w_u[mary] - w_u[john]) * hf.model.norm.weight.double().numpy()
    np.testing.assert_allclose(dla["heads"], ref["heads"] @ direction * scale, atol=1e-3, rtol=0)
    np.testing.assert_allclose(dla["mlps"], ref["mlps"] @ direction * scale, atol=1e-3, rtol=0)
    assert dla["embed"] == pytest.approx(ref["embed"] @ direction * scale, abs=1e-3)
    hf_diff = ref["logits"][mary] - ref["logits"][john]
    assert dla["total"] == pytest.approx(hf_diff, abs=1e-3) and dla["logit_diff"] == pytest.approx(hf_diff, abs=1e-3)
    assert hf_diff > 2  # the model prefers " Mary" clearly (the sum is not trivially 0)
    # the heads that write the answer stand out
    assert dla["heads"].max() > 0.5
    # able to fail: each head's slice of W_O's rows instead of its columns gives other numbers
    d, n_heads = model.config.d_head, model.config.n_heads
    wrong = np.stack([[parts["contexts"][layer, h] @ model.layers[layer].attention.W_O.weight.detach().numpy()[
        h * d:(h + 1) * d, :] for h in range(n_heads)] for layer in range(model.config.n_layers)])
    assert np.abs(wrong @ direction * scale - ref["heads"] @ direction * scale).max() > 1e-2
    unfrozen = dla["total"] / dla["scale"]
    assert abs(unfrozen - hf_diff) > 1e-1


def test_the_logit_lens_last_row_is_the_models_prediction_and_middle_rows_use_the_final_norm(ours, smollm2_hf):
    from transformer_core.analysis.logit_lens import logit_lens

    model, prediction, ids, mary, _john = ours
    hf, _tokenizer = smollm2_hf
    lens = logit_lens(model, prediction["stream"], target=mary)
    n_rows, n = prediction["stream"].shape[:2]
    assert lens["target_prob"].shape == (n_rows, n) == (31, len(ids["clean"]))
    with torch.no_grad():
        out = hf(torch.tensor([ids["clean"]]), output_hidden_states=True)
    probs = torch.softmax(out.logits[0].double(), -1).numpy()  # [pos, vocab]
    np.testing.assert_allclose(lens["target_prob"][-1], probs[:, mary], atol=1e-4, rtol=0)
    assert list(lens["top_ids"][-1]) == list(probs.argmax(-1))
    # a middle row: Hugging Face's hidden state entering layer 15, through its final norm and lm_head
    with torch.no_grad():
        mid = torch.softmax(hf.lm_head(hf.model.norm(out.hidden_states[15][0])).double(), -1).numpy()
        bare = torch.softmax(hf.lm_head(out.hidden_states[15][0]).double(), -1).numpy()  # able to fail: no norm
    np.testing.assert_allclose(lens["target_prob"][15], mid[:, mary], atol=1e-4, rtol=0)
    assert np.abs(bare[:, mary] - lens["target_prob"][15]).max() > 1e-3 or \
        list(bare.argmax(-1)) != list(lens["top_ids"][15])
    assert lens["target_prob"][-1, -1] > 0.5 and lens["target_prob"][0, -1] < 0.01  # the answer forms on the way up


def hf_ld_with_patched_heads(hf, clean: list[int], corrupt: list[int], heads, mary: int, john: int) -> float:
    """Hugging Face's logit difference on ``corrupt`` with each ``(layer, head)``'s slice of o_proj's input (its
    context) taken from the clean run."""
    inner, d = hf.model, hf.config.hidden_size // hf.config.num_attention_heads
    kept = {}
    hooks = [inner.layers[layer].self_attn.o_proj.register_forward_pre_hook(
        lambda m, i, layer=layer: kept.__setitem__(layer, i[0].clone())) for layer, _h in heads]
    with torch.no_grad():
        hf(torch.tensor([clean]))
    for h in hooks:
        h.remove()

    def patch(layer, head):
        def hook(m, i):
            x = i[0].clone()
            x[..., head * d:(head + 1) * d] = kept[layer][..., head * d:(head + 1) * d]
            return (x,)
        return hook

    hooks = [inner.layers[layer].self_attn.o_proj.register_forward_pre_hook(patch(layer, head)) for layer, head in heads]
    try:
        with torch.no_grad():
            logits = hf(torch.tensor([corrupt])).logits[0, -1].double()
    finally:
        for h in hooks:
            h.remove()
    return float(logits[mary] - logits[john])


def test_patching_heads_equals_patching_hugging_faces_o_proj_input(ours, smollm2_hf):
    from transformer_core.analysis.patching import patch_heads

    model, _prediction, ids, mary, john = ours
    hf, _tokenizer = smollm2_hf
    done = []
    out = patch_heads(model, ids["clean"], ids["corrupt"], mary, john, progress=lambda a, b: done.append((a, b)))
    assert out["heads"].shape == (30, 9) and done[-1] == (30, 30)
    clean_ld = hf_ld_with_patched_heads(hf, ids["clean"], ids["clean"], [], mary, john)
    corrupt_ld = hf_ld_with_patched_heads(hf, ids["clean"], ids["corrupt"], [], mary, john)
    assert out["ld_clean"] == pytest.approx(clean_ld, abs=1e-3) and out["ld_corrupt"] == pytest.approx(corrupt_ld,
                                                                                                         abs=1e-3)
    assert clean_ld > 0 > corrupt_ld  # the swap flips the answer
    best = np.unravel_index(np.argmax(out["heads"]), out["heads"].shape)
    for layer, head in [tuple(int(v) for v in best), (0, 0), (17, 3)]:
        ld = hf_ld_with_patched_heads(hf, ids["clean"], ids["corrupt"], [(layer, head)], mary, john)
        assert out["heads"][layer, head] == pytest.approx((ld - corrupt_ld) / (clean_ld - corrupt_ld), abs=1e-3)
    assert out["heads"].max() > 0.1  # some head carries the answer
    # able to fail: the best head patched from the wrong run (corrupted into corrupted) restores nothing
    wrong = hf_ld_with_patched_heads(hf, ids["corrupt"], ids["corrupt"], [tuple(int(v) for v in best)], mary, john)
    assert abs((wrong - corrupt_ld) / (clean_ld - corrupt_ld) - out["heads"][best]) > 0.05


def test_patching_the_residual_stream_moves_the_answer_from_the_name_to_the_end(ours):
    from transformer_core.analysis.patching import patch_residual

    model, _prediction, ids, mary, john = ours
    out = patch_residual(model, ids["clean"], ids["corrupt"], mary, john)
    scores = out["positions"]  # [layer, pos]
    differs = [i for i, (a, b) in enumerate(zip(ids["clean"], ids["corrupt"])) if a != b]
    assert len(differs) == 1  # " John" / " Mary", the second name
    np.testing.assert_allclose(scores[0, differs[0]], 1.0, atol=1e-5)  # the whole difference enters there
    others = [p for p in range(len(ids["clean"])) if p not in differs]
    np.testing.assert_allclose(scores[0, others], 0.0, atol=1e-5)  # the same tokens elsewhere: nothing to restore
    # by the last layer most of it has moved to the last position
    assert scores[-1, -1] > 0.5 and scores[-1, -1] > scores[0, -1] + 0.5 and abs(scores[-1, differs[0]]) < 0.2
    with pytest.raises(ValueError, match="same number of tokens"):
        patch_residual(model, ids["clean"], ids["clean"][:-1], mary, john)
