"""The real-LLM page under an operator's odd settings: a label written like Markdown stays text, and a checkpoint
whose weights hold a NaN gives a message, never a traceback or NaN on screen (tiny random checkpoints,
tests/tiny_checkpoints.py; no test here needs SmolLM2)."""
from __future__ import annotations

import shutil

from apptest_utils import figures, new_app

PAGE = "pages/llm.py"


def _open(monkeypatch, setting: str, **query):
    from ui.llm import catalog

    monkeypatch.setenv(catalog.ENV, setting)
    at = new_app(**query)
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_a_label_written_like_markdown_is_shown_as_typed(monkeypatch, tiny_checkpoints):
    from ui.shell.markdown import plain

    folder, _hf = tiny_checkpoints["qwen2"]
    label = "**Bold** [link](https://example.com) :red[red]"
    at = _open(monkeypatch, f"{label}={folder}")
    assert at.title[0].value == "A real language model: " + plain(label)  # the one model: its name in the title
    # the predictions' explanation and the ablation's sentence name the model: escaped, so no bold, link or colour
    named = [c.value for c in at.caption if "gives every one of its" in c.value or "Wang et al. 2022" in c.value]
    assert len(named) == 2 and all(plain(label) in c for c in named), named


def test_a_checkpoint_with_a_nan_weight_says_so_instead_of_a_traceback(monkeypatch, tiny_checkpoints, tmp_path):
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "damaged"
    shutil.copytree(tiny_checkpoints["qwen2"][0], folder)
    weights = load_file(folder / "model.safetensors")
    weights["model.layers.1.mlp.down_proj.weight"][0, 0] = float("nan")
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    at = _open(monkeypatch, f"Damaged={folder};Other=/no/such", lang="zh")
    at.text_area(key="llm_prompt").set_value("The cat sat on the mat.").run()
    assert not at.exception, [e.message for e in at.exception]
    said = [w.value for w in at.warning]
    assert any("Damaged" in w and "不是有限数" in w for w in said), said
    assert not any("nan" in m.value.lower() for m in at.markdown), "NaN on screen"
    assert at.text_area(key="llm_prompt").value == "The cat sat on the mat."  # the prompt is kept


def test_an_equals_sign_in_a_path_or_a_label_is_read_as_the_operator_meant(tmp_path):
    from ui.llm.catalog import Choice, parse

    odd = tmp_path / "qwen lr=3e-4"  # a bare path with "=": before, labelled by the path's start, read from its end
    odd.mkdir()
    plain_folder = tmp_path / "llama"
    plain_folder.mkdir()
    assert parse(f"{odd}; <img src=x onerror=alert(1)>={plain_folder}; Missing=/no/such=folder") == (
        Choice("qwen lr=3e-4", str(odd)), Choice("<img src=x onerror=alert(1)>", str(plain_folder)),
        Choice("Missing", "/no/such=folder"))
    long_label = "L" * 300  # longer than a file name may be: no path, still a label
    assert parse(f"{long_label}={plain_folder}; Nul\0=x={plain_folder}") == (
        Choice(long_label, str(plain_folder)), Choice("Nul\0=x", str(plain_folder)))


def test_the_ranking_of_a_model_with_fewer_heads_than_the_bars_names_what_it_draws():
    import numpy as np

    from transformer_core.figures.smollm2 import rank_figure

    effect = np.arange(8.0).reshape(2, 4) - 3  # 2 layers x 4 heads: some ablations raise p
    fig = rank_figure(effect, "Mary")
    assert len(fig.data[0].y) == 8 and fig.layout.title.text == "Each of the 8 heads ablated alone, by how much p(Mary) falls"
    assert "the 15 that" in rank_figure(np.zeros((30, 9)), "Mary").layout.title.text  # SmolLM2's 270: the top 15


def test_patching_a_corrupted_prompt_that_changes_nothing_says_so_instead_of_blank_figures(monkeypatch,
                                                                                          tiny_checkpoints):
    folder, _hf = tiny_checkpoints["qwen2"]
    prompt = "When Mary and John went to the store, John gave a drink to"
    at = _open(monkeypatch, f"Tiny={folder};Other=/no/such", lang="zh", prompt=prompt)
    at.text_input(key="llm_corrupt").set_value(prompt).run()  # the prompt itself: logit differences equal, 0/0
    at.button(key="llm_patch_button").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("没有什么可以恢复" in i.value for i in at.info), [i.value for i in at.info]
    views = [f["layout"].get("meta", {}).get("view") for f in figures(at)]
    assert "dla" in views and "patching" not in views, views  # no figures of blank (0/0) cells
    # the ablation's examples are heads this 2-layer x 4-head model has (not SmolLM2's L9H3, L12H0)
    heads = at.multiselect(key="llm_ablate")
    assert heads.placeholder == "选择头，例如 L1H3" and heads.help.endswith("ablate=L1H3,L1H0"), heads.help
