"""AppTest of the "Trained causal model" page: the figures show the model's real numbers."""
from __future__ import annotations

import numpy as np
import pytest
from apptest_utils import figures, focus, heatmap_z, new_app, tiles

from transformer_core.analysis.causal_sequence import repeated_sequence as generate
from transformer_core.models import causal
from transformer_core.models.causal import run_causal


def _open(**query):
    at = new_app(**query)
    at.switch_page("pages/causal.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_default_shows_induction_stripe_of_final_model():
    at = _open(layer="1", head="1")
    ids = generate(16, 0)
    assert at.text_input(key="causal_text").value == " ".join(map(str, ids))
    expected = run_causal(ids).stages["layers.1.attention.weights"][0, 1]  # [query_pos, key_pos]
    z = heatmap_z(focus(at))
    np.testing.assert_allclose(np.nan_to_num(z), expected, atol=1e-6)
    assert np.isnan(z[np.triu_indices(32, 1)]).all()  # causal mask: the future is blank
    stripe = np.mean([z[q, q - 15] for q in range(17, 32)])  # key = query − period + 1, second half
    assert stripe > 0.6
    _, heads = tiles(at)
    np.testing.assert_allclose(np.nan_to_num(heads), run_causal(ids).stages["layers.1.attention.weights"][0],
                               atol=1e-6)
    overview = [f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == "overview"][0]
    assert overview["layout"]["meta"]["n_layers"] == 2 and overview["layout"]["meta"]["n_heads"] == 4
    table = at.dataframe[0].value
    held = causal.training_log()["scores"]["4000"]
    np.testing.assert_allclose(table["induction, period diagonal (held out)"], np.ravel(held["induction"]))
    assert table["previous-token (held out)"][0] >= 0.5  # layer 0, head 0
    assert "on the repeat" in at.markdown[0].value
    assert at.query_params["seq"] == " ".join(map(str, ids))


def test_checkpoint_before_the_bump_has_no_induction():
    at = _open(layer="1", head="1", checkpoint="200")
    assert at.select_slider(key="causal_step").value == 200
    table = at.dataframe[0].value
    assert table["induction, period diagonal (this sequence)"].max() < 0.3
    curve = [f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == "loss_curve"][0]
    assert curve["layout"]["meta"]["step"] == 200
    # moving the slider to the end brings the stripe
    at.select_slider(key="causal_step").set_value(4000).run()
    assert at.dataframe[0].value["induction, period diagonal (this sequence)"].max() > 0.6


def test_mask_off_states_what_breaks_with_numbers():
    at = _open(causal_mask="0")
    ids = generate(16, 0)
    on = float(run_causal(ids).stages["token_loss"].mean())
    off = float(run_causal(ids, causal=False).stages["token_loss"].mean())
    warning = at.warning[0].value
    assert "Causal mask off" in warning
    assert f"**{off:.2f}** nats without the mask vs **{on:.2f}** with it" in warning
    # right under its toggle, above the loss curve (it was ~880 px down at 1280×720, below the loss text)
    def flat(node):
        for child in getattr(node, "children", {}).values():
            yield child
            yield from flat(child)

    order = [type(e).__name__ for e in flat(at.main)]
    assert order.index("Warning") < order.index("UnknownElement"), order  # the loss curve: the first chart
    z = heatmap_z(focus(at))
    assert not np.isnan(z).any() and z[np.triu_indices(32, 1)].sum() > 0  # the future is visible now


def test_typed_sequence_and_bad_input():
    at = _open()
    at.text_input(key="causal_text").set_value("1 2 3 4 5 1 2 3 4 5").run()
    assert "**Period 5**" in at.markdown[0].value
    at.text_input(key="causal_text").set_value("1 2 cat").run()
    assert "'cat' is not a token id" in at.warning[0].value


def test_corrupt_weights_clear_error_other_pages_work(monkeypatch):
    monkeypatch.setattr(causal, "WEIGHTS_SHA256", "0" * 64)
    causal._load_cached.cache_clear()
    try:
        at = _open(seq="1 2 3 1 2 3")
        assert "not the committed ones" in at.error[0].value
        at.switch_page("pages/explorer.py").run()
        assert not at.exception and not at.error
    finally:
        monkeypatch.undo()
        causal._load_cached.cache_clear()


@pytest.mark.parametrize("query", [{"period": "99"}, {"checkpoint": "7"}])
def test_bad_url_falls_back(query):
    at = _open(**query)
    assert any("ignored" in w.value for w in at.warning)


def test_new_random_sequence_and_period():
    at = _open()
    at.button[0].click().run()
    assert at.number_input(key="causal_seed").value == 1
    assert at.text_input(key="causal_text").value == " ".join(map(str, generate(16, 1)))
    at.number_input(key="causal_period").set_value(24).run()
    assert at.text_input(key="causal_text").value == " ".join(map(str, generate(24, 1)))
    assert "**Period 24**" in at.markdown[0].value and at.query_params["period"] == "24"


def test_mask_off_explains_lower_or_higher():
    """Final model: loss rises without the mask (3.32 vs 2.22); step 600: it falls (2.37 vs 2.55, reads the answer)."""
    assert "Higher:" in _open(causal_mask="0").warning[0].value
    assert "Lower:" in _open(causal_mask="0", checkpoint="600").warning[0].value


@pytest.mark.parametrize("lang, words", [("en", "at least 2 tokens"), ("zh", "至少输入 2 个词元")])
def test_one_token_says_why_the_predictions_table_is_empty(lang, words):
    at = _open(seq="5", preds="1", lang=lang)
    assert all(len(d.value) for d in at.dataframe)  # no empty predictions table
    assert any(words in i.value for i in at.info), [i.value for i in at.info]
    two = _open(seq="5 7", preds="1")
    table = next(d.value for d in two.dataframe if "position" in d.value.columns)
    assert list(table["token"]) == [5] and list(table["next token"]) == [7]
