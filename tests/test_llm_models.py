"""The real-LLM page offers only the models its operator lists (``AE_LLM_MODELS`` or the ``llm_models`` secret), by
name: a local checkpoint there runs on the page with its own sizes, its numbers equal Hugging Face eager's, and a
listed path that cannot be read says so in the page's language while the other models keep working.

The checkpoints are tiny random ones written by ``transformers`` (tests/tiny_checkpoints.py, once per session); no
test here needs SmolLM2."""
from __future__ import annotations

import numpy as np
import pytest

from apptest_utils import decode, figures, new_app

PAGE = "pages/llm.py"


def test_the_setting_parses_to_labelled_choices_in_order(tmp_path):
    from ui.llm.catalog import DEFAULT, SMOLLM2, Choice, parse

    folder = tmp_path / "Qwen2.5-0.5B"
    got = parse(f" smollm2 ;Qwen small={folder}\n\n{folder}; Qwen small=/elsewhere ;SmolLM2")
    assert got == (DEFAULT, Choice("Qwen small", str(folder.resolve())),
                   Choice("Qwen2.5-0.5B", str(folder.resolve())))  # a repeated label keeps the first
    assert parse({"A": "smollm2", "B": str(folder)}) == (Choice("A", SMOLLM2), Choice("B", str(folder.resolve())))
    assert parse(["", "  "]) == () and parse("") == ()
    assert Choice("Qwen 2.5 / 0.5B!", "x").slug == "qwen-2.5-0.5b"


def test_without_a_setting_the_list_is_smollm2_alone(monkeypatch):
    from ui.llm import catalog

    monkeypatch.delenv(catalog.ENV, raising=False)
    assert catalog.configured() == (catalog.DEFAULT,)
    monkeypatch.setenv(catalog.ENV, " ; ")
    assert catalog.configured() == (catalog.DEFAULT,)


def test_the_menu_names_smollm2_only_while_it_is_the_one_model(monkeypatch, tmp_path):
    from ui.llm import catalog
    from ui.shell import nav

    def llm_title() -> str:
        title = catalog.menu_title()
        return nav.menu_titles({"llm": title} if title else None)["llm"]

    monkeypatch.delenv(catalog.ENV, raising=False)
    assert llm_title() == "Real LLM (SmolLM2)"
    monkeypatch.setenv(catalog.ENV, "SmolLM2 for the class=smollm2")
    assert llm_title() == "Real LLM (SmolLM2)"
    monkeypatch.setenv(catalog.ENV, f"smollm2; Qwen={tmp_path}")
    assert llm_title() == "Real LLM"  # the menu must not promise SmolLM2 when the page offers Qwen too


def _open(monkeypatch, setting: str | None = None, secrets: dict | None = None, **query):
    from ui.llm import catalog

    if setting is None:
        monkeypatch.delenv(catalog.ENV, raising=False)
    else:
        monkeypatch.setenv(catalog.ENV, setting)
    at = new_app(**query)
    for key, value in (secrets or {}).items():
        at.secrets[key] = value
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _hf_probs(model, folder, text: str) -> np.ndarray:
    import torch
    from tokenizers import Tokenizer

    ids = Tokenizer.from_file(str(folder / "tokenizer.json")).encode(text).ids
    with torch.no_grad():
        logits = model(torch.tensor([ids]), use_cache=False).logits[0, -1]
    return torch.softmax(logits.double(), -1).numpy()


def test_a_listed_checkpoint_runs_on_the_page_with_its_own_sizes_and_hugging_faces_numbers(monkeypatch,
                                                                                        tiny_checkpoints):
    folder, hf = tiny_checkpoints["qwen2"]
    at = _open(monkeypatch, f"Tiny Qwen2={folder}; Broken=/no/such/folder", model="Tiny Qwen2")
    picker = at.selectbox(key="llm_model")
    assert list(picker.options) == ["Tiny Qwen2", "Broken"] and picker.value == "Tiny Qwen2"
    assert at.title[0].value == "A real language model"  # the picker beside it names the model
    assert at.query_params["model"] in ("Tiny Qwen2", ["Tiny Qwen2"])
    # the prediction bars are softmax of Hugging Face's logits (top-k 5 by default)
    bars = next(f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == "predictions")["data"][0]
    probs = _hf_probs(hf, folder, at.text_area(key="llm_prompt").value)
    np.testing.assert_allclose(np.asarray(decode(bars["x"]), float)[:5], np.sort(probs)[::-1][:5], atol=1e-5)
    # the grid and the head pickers have the checkpoint's 2 layers × 4 heads, not SmolLM2's 30 × 9
    body = "\n".join(m.value for m in at.markdown)
    assert "**All 2 layers × 4 heads**" in body and "2 key/value groups" in body
    assert list(at.selectbox(key="llm_head").options) == ["0", "1", "2", "3"]
    captions = "\n".join(c.value for c in at.caption)
    assert "A local checkpoint this server offers" in captions and "chat template is not applied" in captions
    # the mean mode's reference set runs on this model (tests/test_decoder_mean_ablation.py)
    assert list(at.radio(key="llm_ablate_mode").options) == ["zero (context = 0)", "mean over the reference set"]


def test_a_listed_path_that_cannot_be_read_says_so_and_the_prompt_is_kept(monkeypatch, tiny_checkpoints):
    folder, _hf = tiny_checkpoints["llama"]
    at = _open(monkeypatch, f"Tiny={folder};Broken=/no/such/folder", lang="zh")
    at.text_area(key="llm_prompt").set_value("The cat sat on the mat.").run()
    at.selectbox(key="llm_model").set_value("Broken").run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("Broken" in e.value and "无法读取" in e.value for e in at.error), [e.value for e in at.error]
    assert at.query_params["model"] in ("Broken", ["Broken"])
    at.selectbox(key="llm_model").set_value("Tiny").run()
    assert not at.exception and not at.error
    assert at.text_area(key="llm_prompt").value == "The cat sat on the mat."  # nothing lost on the way


def test_the_secret_lists_the_models_when_the_variable_is_unset(monkeypatch, tiny_checkpoints):
    folder, _hf = tiny_checkpoints["mistral"]
    at = _open(monkeypatch, None, secrets={"llm_models": {"From the secret": str(folder)}})
    assert at.title[0].value == "A real language model: From the secret"
    with pytest.raises(KeyError):
        at.selectbox(key="llm_model")


def test_float32_bytes_is_the_loaded_weights_size_read_from_the_config_alone(tiny_checkpoints):
    from transformer_core.models.checkpoint import float32_bytes

    for arch in ("qwen2", "llama"):  # tied and untied embeddings
        folder, hf = tiny_checkpoints[arch]
        assert float32_bytes(folder) == 4 * sum(p.numel() for p in hf.parameters()), arch


def test_a_checkpoint_that_would_not_fit_in_memory_is_refused_before_it_is_read(monkeypatch, tiny_checkpoints,
                                                                                 tmp_path):
    import shutil

    from transformer_core import models
    from ui.shell import heavy

    folder = tmp_path / "fresh"  # a checkpoint no other test loaded in this process
    shutil.copytree(tiny_checkpoints["qwen2"][0], folder)
    # the replica's limit leaves no room beside what this process holds and the small runs' headroom
    monkeypatch.setenv("AE_MEMORY_LIMIT_MB", str((heavy.resident_bytes() + heavy.HEADROOM) // 2**20))
    at = _open(monkeypatch, f"Big={folder};Other=/no/such")
    assert any("“Big” is too large for this server" in e.value for e in at.error), [e.value for e in at.error]
    assert not models.is_held(folder)
    monkeypatch.delenv("AE_MEMORY_LIMIT_MB")  # with room, the same model runs
    at.text_area(key="llm_prompt").set_value("The cat sat").run()
    assert not at.exception and not at.error and models.is_held(folder)


def test_on_a_checkpoint_with_output_biases_the_attribution_names_them_and_adds_up(monkeypatch, tiny_checkpoints):
    import re

    folder, _hf = tiny_checkpoints["llama"]  # attention_bias=True: o_proj has a bias in every layer
    at = _open(monkeypatch, f"Tiny Llama={folder};SmolLM2=smollm2", model="Tiny Llama")
    said = next(m.value for m in at.markdown if m.value.startswith("**The parts add up"))
    assert "the attention output biases" in said, said
    total, own = (float(x.replace("−", "-")) for x in re.findall(r"\*\*([+−-]?\d+\.\d{3})\*\*", said))
    assert total == pytest.approx(own, abs=2e-3), said  # without the bias term the parts miss by tenths


def test_the_setting_s_own_word_picks_smollm2_and_an_unreadable_path_is_not_shown(monkeypatch, tmp_path):
    from ui.llm.catalog import DEFAULT

    secret = tmp_path / "operators-private-folder" / "qwen"
    at = _open(monkeypatch, f"smollm2;Qwen={secret}", model="smollm2")
    assert at.selectbox(key="llm_model").value == DEFAULT.label and not at.warning  # ?model=smollm2 is understood
    at.selectbox(key="llm_model").set_value("Qwen").run()
    shown = "\n".join([e.value for e in at.error] + [c.value for c in at.caption])
    assert "cannot be read" in shown and "operators-private-folder" not in shown, shown


def test_the_route_goes_into_the_new_model_s_last_token_after_a_switch(monkeypatch, tiny_checkpoints):
    qwen, llama = tiny_checkpoints["qwen2"][0], tiny_checkpoints["llama"][0]
    at = _open(monkeypatch, f"Q={qwen};L={llama}", routes="1")
    n_q = len(at.selectbox(key="llm_route_pos").options)
    at.selectbox(key="llm_route_pos").set_value(3).run()
    at.selectbox(key="llm_model").set_value("L").run()  # the llama tokenizer adds a BOS: one token more
    route = at.selectbox(key="llm_route_pos")
    assert len(route.options) == n_q + 1 and route.value == n_q, (route.value, len(route.options))


def test_where_the_top_heads_look_names_only_heads_whose_ablation_lowers_p_mary(monkeypatch, tiny_checkpoints):
    import re

    from ui.llm import compute
    from ui.llm.catalog import parse

    folder, _hf = tiny_checkpoints["qwen2"]
    at = _open(monkeypatch, f"Tiny={folder};SmolLM2=smollm2", model="Tiny")
    at.button(key="llm_rank_button").click().run(timeout=300)
    assert not at.exception, [e.message for e in at.exception]
    effect = compute.ranked(parse(f"Tiny={folder}")[0], "zero", "ioi")["effect"]  # the page's cached ranking
    lowering = int((effect > 0).sum())
    said = "\n".join(c.value for c in at.caption)
    if lowering == 0:
        assert "No head's ablation lowers" in said
    else:
        n = int(re.search(r"in the (\d+) heads whose ablation lowers", said).group(1))
        assert n == min(6, lowering), (n, lowering)
        named = re.findall(r"L(\d+)H(\d+) \d", said.split("weight on “Mary”")[1].split(".")[0])
        assert all(effect[int(lay), int(h)] > 0 for lay, h in named), (named, effect)
    assert 0 < lowering < effect.size  # a random model: some heads raise p(Mary), so the test can fail


def _scrolled(at) -> bool:
    """Whether the run scrolls the head view's answer into view (the script a click on the head view adds)."""
    return any("ae-answer-llm_" in str(h.proto) for h in at.get("html"))


def test_a_switch_of_model_names_the_choices_it_cannot_keep_and_switching_back_restores_them(monkeypatch,
                                                                                             tiny_checkpoints):
    folder, _hf = tiny_checkpoints["qwen2"]  # 2 layers × 4 heads; SmolLM2 has 30 × 9
    at = _open(monkeypatch, f"SmolLM2=smollm2;Tiny={folder}", layer="25", head="7", ablate="L9H3,L0H1")
    assert (at.session_state["llm_layer"], at.session_state["llm_head"]) == (25, 7)
    at.selectbox(key="llm_model").set_value("Tiny").run()
    assert not at.exception, [e.message for e in at.exception]
    assert (at.session_state["llm_layer"], at.session_state["llm_head"]) == (0, 0)
    assert at.session_state["llm_ablate"] == ["L0H1"]  # the head both models have stays
    note = next(i.value for i in at.info if "went back to their defaults" in i.value)
    assert all(w in note for w in ("layer 25", "head 7", "L9H3", "2 layers of 4 heads")), note
    assert "L0H1" not in note
    assert not _scrolled(at)  # the note and the model picker stay in view: no jump to the reset head
    at.selectbox(key="llm_model").set_value("SmolLM2").run()
    assert (at.session_state["llm_layer"], at.session_state["llm_head"]) == (25, 7)
    assert not _scrolled(at)
    assert sorted(at.session_state["llm_ablate"]) == ["L0H1", "L9H3"]
    assert not any("went back" in i.value for i in at.info)


def test_a_link_naming_a_model_a_single_model_server_does_not_offer_says_so(monkeypatch):
    at = _open(monkeypatch, None, model="Tiny")
    said = [w.value for w in at.warning]
    assert any("model=Tiny" in w and "SmolLM2" in w for w in said), said
    assert "model" not in at.query_params  # the link loses the name it could not use
    at = _open(monkeypatch, None, model="smollm2")  # the setting's own word: nothing to say
    assert not [w.value for w in at.warning if "model=" in w.value]
