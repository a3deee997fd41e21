"""SmolLM2's byte-level BPE (built from the GGUF's embedded vocabulary with the ``tokenizers`` library) gives the ids
Hugging Face's ``AutoTokenizer(gguf_file=…)`` gives, on 200+ strings: English, code, numbers, Chinese, emoji (with
skin tones and joiners), whitespace runs, typed control-token text (split as text, as Hugging Face splits it with
``split_special_tokens=True``). And the readable labels: a visible leading space, and the
byte pieces of one character numbered, never "�".
"""
from __future__ import annotations

import itertools

import pytest
import regex

from transformer_core.models.smollm2 import encode, load_smollm2
from transformer_core.text.byte_bpe import build_byte_bpe, byte_table, token_bytes, token_labels

BASE = [
    "", " ", "  ", "   ", "\t", "\n", "\n\n", " \n ", "\r\n", "a", " a", "a ", "Hello", " Hello", "Hello world",
    "Hello  world", "Hello   world   ", "When Mary and John went to the store, John gave a drink to",
    "The quick brown fox jumps over the lazy dog.", "It's", "it's I'm we'll they've he'd you're",
    "DON'T SHOUT", "don't", "e.g. i.e. etc.", "C'est la vie, n'est-ce pas ?", "naïve café résumé",
    "Straße", "ΑΒΓ αβγ", "Привет, мир", "مرحبا", "שלום", "नमस्ते", "こんにちは", "カタカナ", "안녕하세요",
    "我", "我爱你", "我爱北京天安门", "今天天气很好。", "注意力机制", "中文 English 混合", "你好，世界！", "（括号）",
    "😀", "😀😀", "👍🏽", "👨‍👩‍👧", "🇨🇳", "❤️", "I ❤️ NY", "emoji 🤖 in text", "😀 我", "x😀y",
    "0", "1", "12", "123", "12345", "3.14159", "1,000,000", "2026-12-04", "x²", "½", "①②", "Ⅻ", "٣", "१२",
    "$100", "50%", "#hashtag", "@user", "a+b=c", "a_b", "snake_case_name", "CamelCaseName", "x->y", "i++",
    "def f(x):\n    return x * 2\n", "for (int i = 0; i < n; i++) {}", "<html><body>hi</body></html>",
    "{\"key\": [1, 2, 3]}", "print('hello')", "    indented", "\tTabbed\tline", "trailing   ",
    "<|im_start|>user\nHi<|im_end|>", "<|endoftext|>", "<|im_start|>", "text<|im_end|>more", "<|unknown|>",
    "...", "!!!", "???", "—", "–", "…", "«quotes»", "\u201csmart\u201d", "\u00a0nbsp", "zero\u200bwidth",
    "ﬁ ligature", "Å", "A\u030a", "🏳️‍🌈", "‼️", "©®™", "§¶†", "\\backslash\\", "tab\tand space",
]
SEPARATORS = [" ", "  ", "\n", "", " 😀 ", "，", "\t "]


def strings() -> list[str]:
    """The literal list and a deterministic mix of its pieces: 200+ strings."""
    out = list(BASE)
    short = [s for s in BASE if 0 < len(s) < 20]
    for i, (a, b) in enumerate(itertools.islice(itertools.combinations(short, 2), 0, 2000, 13)):
        out.append(a + SEPARATORS[i % len(SEPARATORS)] + b)
    return out


def test_the_list_is_long_and_varied():
    texts = strings()
    assert len(texts) >= 200
    assert any("我" in t for t in texts) and any("😀" in t for t in texts) and any("   " in t for t in texts)


SPACE_THEN_NUMERIC = regex.compile(r"\s\p{N}")


def test_token_ids_equal_hugging_faces_gguf_tokenizer(smollm2_hf):
    """Equal on every string but those with a numeric character after whitespace: there Hugging Face's GGUF
    converter (transformers 5.24) ignores ``tokenizer.ggml.pre = smollm`` and uses GPT-2's regex alone, so it gives
    exactly what a ``gpt2`` pre-tokenizer over the same vocabulary gives. The vocabulary itself shows that SmolLM2
    was trained with digits apart: its only tokens with an ASCII digit are the ten digits alone (no "Ġ1", no "12")."""
    _, reference = smollm2_hf
    _, ours = load_smollm2()
    vocab = ours.get_vocab()
    assert sorted(t for t in vocab if any("0" <= c <= "9" for c in t)) == list("0123456789")
    fields = _fields()
    gpt2_only = build_byte_bpe(fields["tokens"], fields["merges"], "gpt2", fields["token_type"])
    equal, explained = 0, 0
    for text in strings():
        theirs = reference(text, split_special_tokens=True)["input_ids"]  # typed text stays text
        mine = ours.encode(text, add_special_tokens=False).ids
        if mine == theirs:
            equal += 1
            continue
        assert SPACE_THEN_NUMERIC.search(text), (text, mine, theirs)
        assert gpt2_only.encode(text, add_special_tokens=False).ids == theirs, text
        explained += 1
    assert equal >= 200 and explained <= 5


def _fields() -> dict:
    import gguf

    from transformer_core.models.gguf_header import read_header
    from transformer_core.models.gguf_weights import gguf_path, tokenizer_fields

    return tokenizer_fields(read_header(gguf_path(), gguf.constants.GGML_QUANT_SIZES)[0])


def test_decoding_gives_the_text_back():
    _, ours = load_smollm2()
    for text in strings():
        assert ours.decode(ours.encode(text, add_special_tokens=False).ids) == text


CONTROL_TEXT = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<issue_start>", "<|im_start|>user\nHi<|im_end|>",
                "a<|endoftext|>b", "<repo_name>x<file_sep>"]


@pytest.mark.parametrize("text", CONTROL_TEXT)
def test_typed_control_token_text_stays_text(text):
    """Text that spells a control token is split as ordinary text, on the page and in the CLI alike (both encode
    through ``encode``): no id of a control token, and the ids decode to the typed text."""
    _, tokenizer = load_smollm2()
    ids, tokens, labels = encode(text)
    control = {tokenizer.token_to_id(t) for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<issue_start>",
                                                   "<repo_name>", "<file_sep>")}
    assert None not in control and not control & set(ids), (text, ids)
    assert len(ids) > 1 and "".join(labels).replace("␣", " ").replace("↵", "\n") == text
    assert tokenizer.decode(ids, skip_special_tokens=False) == text
    assert tokenizer.token_to_id("<|im_end|>") == 2  # still known, so generation stops at the model's own EOS


def test_the_control_tokens_are_still_specials_in_the_vocabulary():
    """Only encoding text stops matching them: the ids the app puts in itself decode as the control tokens."""
    _, tokenizer = load_smollm2()
    assert tokenizer.decode([1, 2], skip_special_tokens=False) == "<|im_start|><|im_end|>"
    assert encode("<|endoftext|>")[1] == ["<", "|", "end", "of", "text", "|", ">"]


def test_a_vocabulary_without_digit_splitting_is_noticed():
    """The ``smollm`` pre-tokenizer cuts around every digit before GPT-2's regex: a tiny vocabulary that could merge
    " 1" shows the difference (so the name in ``tokenizer.ggml.pre`` matters)."""
    tokens = ["Ġ", "1", "2", "Ġ1", "12"]
    merges = ["Ġ 1", "1 2"]
    digits_apart = build_byte_bpe(tokens, merges, "smollm")
    gpt2 = build_byte_bpe(tokens, merges, "gpt2")
    assert digits_apart.encode(" 12").tokens == ["Ġ", "1", "2"]
    assert gpt2.encode(" 12").tokens == ["Ġ1", "2"]
    with pytest.raises(ValueError, match="unknown pre-tokenizer"):
        build_byte_bpe(tokens, merges, "llama-bpe-of-the-future")


def test_byte_table_is_gpt2s():
    table = byte_table()
    assert len(set(table.values())) == 256
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("a")] == "a"
    assert token_bytes("Ġthe") == b" the"


def test_labels_show_spaces_and_number_the_pieces_of_a_character():
    ids, raw, labels = encode("When Mary 我爱你 😀  ok")
    assert labels[:2] == ["When", "␣Mary"]
    assert "�" not in "".join(labels)
    for char in "我爱你😀":  # each in several byte pieces here, numbered 1/n … n/n in consecutive tokens
        pieces = [(i, label) for i, label in enumerate(labels) if char in label]
        n = len(pieces)
        assert n >= 2 and [i for i, _ in pieces] == list(range(pieces[0][0], pieces[0][0] + n))
        assert [label.endswith(f"{char} ({j}/{n})") or f"{char} ({j}/{n})" in label
                for j, (_, label) in enumerate(pieces, 1)] == [True] * n
    assert labels[-1] == "␣ok" and labels[-2] == "␣"  # a run of two spaces before "ok": one shown as ␣


def test_labels_of_pieces_that_never_complete_a_character():
    table = byte_table()
    lone = table[0xE6] + table[0x88]  # the first two bytes of 我 with nothing after them
    assert token_labels([lone]) == ["<0xE6><0x88>"]
    assert token_labels(["a" + table[0xE6], table[0x88] + table[0x91] + "b"]) == ["a+我 (1/2)", "我 (2/2)+b"]
    assert token_labels(["<|im_start|>"]) == ["<|im_start|>"]
