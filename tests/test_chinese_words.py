"""Chinese typed as words: the word-level tokenizer cuts runs of Han characters with jieba.

Before, every Chinese character was a token (我 / 们 / 今 / 天 …): the first tests fail on that code.
"""
from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from transformer_core.text import tokenize
from transformer_core.text.tokenize import batch_tokens, word_tokenize


@pytest.mark.parametrize("text, expected", [
    ("我们今天学习注意力机制", ["我们", "今天", "学习", "注意力", "机制"]),  # the sentence that was cut into single characters
    ("多头注意力", ["多头", "注意力"]),
    ("猫坐在垫子上，因为它累了。", ["猫", "坐在", "垫子", "上", "，", "因为", "它", "累", "了", "。"]),
    ("我爱猫", ["我", "爱", "猫"]),  # HMM off: no made-up three-character word
])
def test_chinese_sentences_are_cut_into_words(text, expected):
    assert word_tokenize(text) == expected


@pytest.mark.parametrize("text, expected", [
    # English words, numbers and punctuation keep today's rules between the Chinese words
    ("我用PyTorch学习Transformer的注意力！", ["我", "用", "PyTorch", "学习", "Transformer", "的", "注意力", "！"]),
    ("BERT模型有12层, don’t panic", ["BERT", "模型", "有", "12", "层", ",", "don't", "panic"]),
    # emoji (with skin tone, ZWJ family, keycap) stay whole and split the Chinese run
    ("注意力😀机制👍🏽", ["注意力", "😀", "机制", "👍🏽"]),
    ("我们👨\u200d👩\u200d👧今天 #️⃣", ["我们", "👨\u200d👩\u200d👧", "今天", "#️⃣"]),
    # Japanese (a chunk holding kana) and Korean keep one token per character, as before
    ("東京タワー", ["東", "京", "タ", "ワ", "ー"]),
    ("한국어", ["한", "국", "어"]),
])
def test_mixed_text_keeps_todays_rules_outside_chinese(text, expected):
    assert word_tokenize(text) == expected


def test_every_character_is_kept():
    text = "老师给全班同学讲解注意力机制 and the cat 🐱 sat, 对吧？"
    assert "".join(word_tokenize(text)) == "".join(text.split())


def test_batch_of_chinese_sentences_pads_by_words():
    batch = batch_tokens(["我们今天学习注意力机制", "注意力"])
    assert batch.lengths == (5, 1)
    assert batch.tokens[1] == ("注意力", "[PAD]", "[PAD]", "[PAD]", "[PAD]")


def test_jieba_is_built_once_under_concurrency(monkeypatch):
    import jieba

    built = []
    real = jieba.Tokenizer

    class Counting(real):
        def __init__(self, *a, **k):
            built.append(1)
            super().__init__(*a, **k)

    monkeypatch.setattr(tokenize, "_jieba_tokenizer", None)
    monkeypatch.setattr(jieba, "Tokenizer", Counting)
    barrier, results = threading.Barrier(8), []

    def work():
        barrier.wait()
        results.append(word_tokenize("我们今天学习注意力机制"))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1
    assert results == [["我们", "今天", "学习", "注意力", "机制"]] * 8


def test_jieba_is_quiet_and_uses_its_own_dictionary():
    """A fresh process prints nothing on first use, and the dictionary is the file shipped in the package."""
    code = ("import jieba; from transformer_core.text.tokenize import word_tokenize, _jieba;"
            "print(word_tokenize('注意力机制')); import os;"
            "print(os.path.dirname(jieba.__file__) in os.path.abspath(jieba.DEFAULT_DICT_NAME) or "
            "os.path.exists(os.path.join(os.path.dirname(jieba.__file__), jieba.DEFAULT_DICT_NAME)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parent.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["['注意力', '机制']", "True"]
    assert out.stderr == ""  # no "Building prefix dict from the default dictionary …"
