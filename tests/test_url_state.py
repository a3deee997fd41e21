"""parse_query_params: every bad value falls back to its default with a note naming it."""
from ui.shell.controls import DEFAULTS, MAX_CHARS, parse_query_params, split_sentences, to_query_params


def test_missing_parameters_give_defaults_and_no_notes():
    assert parse_query_params({}) == (DEFAULTS, [])


def test_valid_parameters_round_trip():
    values = dict(DEFAULTS, text="hi there", d_model=32, n_heads=4, causal=True, padding=False, seed=9)
    assert parse_query_params(to_query_params(values)) == (values, [])


def test_bad_values_fall_back_one_by_one():
    values, notes = parse_query_params({"d_model": "12", "n_heads": "x", "causal": "2", "seed": "1e3"})
    assert (values["d_model"], values["n_heads"], values["causal"], values["seed"]) == (64, 8, False, 0)
    assert len(notes) == 4 and "d\\_model=12" in notes[0]  # Markdown-escaped: shown as text


def test_n_heads_must_divide_d_model():
    values, notes = parse_query_params({"d_model": "96", "n_heads": "64"})
    assert values["d_model"] == 96 and values["n_heads"] == 8 and "must divide" in notes[0]


def test_the_tokenizer_travels_in_the_url():
    assert parse_query_params({"tokenizer": "wordpiece"})[0]["tokenizer"] == "wordpiece"
    values, notes = parse_query_params({"tokenizer": "bpe"})
    assert values["tokenizer"] == "word" and "tokenizer=bpe" in notes[0]


def test_list_values_take_the_last_and_text_is_cut():
    values, notes = parse_query_params({"seed": ["1", "2"], "text": "x" * (MAX_CHARS + 5)})
    assert values["seed"] == 2 and len(values["text"]) == MAX_CHARS and notes


def test_split_sentences_drops_blank_lines_and_caps_the_batch():
    sentences, notes = split_sentences("a\n\n  \nb\n" + "c\n" * 10)
    assert sentences[:2] == ("a", "b") and len(sentences) == 6 and notes
