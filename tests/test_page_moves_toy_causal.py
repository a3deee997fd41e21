"""stage=norms on the explorer (toy model, its seeded W_O) and on the causal page, and color= on the causal page's
overview (AppTest), checked against independent recomputations."""
from __future__ import annotations

import numpy as np

from apptest_utils import figures, focus, heatmap_z, new_app


def open_page(page: str, **query):
    at = new_app(**query)
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_explorer_norms_are_alpha_times_the_norm_of_v_through_the_seeded_W_O():
    from transformer_core.models.toy import run_toy
    from transformer_core.nn.config import EncoderConfig
    from transformer_core.nn.encoder import Encoder

    at = open_page("pages/explorer.py", text="the cat sat on the mat", stage="norms", head="3")
    fig = focus(at)
    assert fig["layout"]["meta"]["stage"] == "norms"
    config = EncoderConfig(d_model=64, n_heads=8, d_ff=256, seed=0)
    trace = run_toy(["the cat sat on the mat"], config, max_tokens=128)
    W_O = Encoder(config).layers[0].attention.W_O.weight.detach().double().numpy().T  # concat @ W_O
    v = trace.stage("v")[0, 3].astype(np.float64)  # [key, d_head]
    f = np.linalg.norm(v @ W_O[3 * 8:4 * 8], axis=-1)  # head 3's 8 rows of W_O
    np.testing.assert_allclose(heatmap_z(fig), trace.stage("weights")[0, 3] * f[None, :], atol=1e-5)


def test_causal_page_norms_and_duplicate_token_colour():
    from transformer_core.analysis.head_types import head_types
    from transformer_core.models.causal import run_causal

    ids = "5 17 3 9 22 5 17 3 9 22"
    at = open_page("pages/causal.py", seq=ids, stage="norms", layer="1", head="2", color="duplicate_token")
    assert focus(at)["layout"]["meta"] == {"stage": "norms", "head": 2, "layer": 1, "batch": 0, "cells": True}
    [over] = [f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == "overview"]
    expected = head_types(run_causal([int(t) for t in ids.split()]), 0, ("duplicate_token",))["duplicate_token"]
    np.testing.assert_allclose(np.array(over["layout"]["meta"]["scores"]).ravel(), expected, atol=1e-4)
    assert over["layout"]["meta"]["color"] == "duplicate-token" and at.query_params["color"] == "duplicate_token"
