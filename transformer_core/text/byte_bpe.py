"""Byte-level BPE (GPT-2 style) built from a GGUF file's embedded vocabulary, and readable labels for its tokens.

Sources:
- Radford et al., "Language Models are Unsupervised Multitask Learners" (GPT-2, 2019), §2.2: BPE over UTF-8
  bytes, each byte shown as a printable character (the ``bytes_to_unicode`` table: printable Latin-1 bytes stand
  for themselves, the other 68 bytes for U+0100 onwards, so a space is ``Ġ`` and a newline ``Ċ``), and a
  pre-tokenizer regex that keeps BPE merges inside words.
- llama.cpp (``llama-vocab.cpp``): a GGUF file names its pre-tokenizer in ``tokenizer.ggml.pre``; for ``smollm``
  (as for ``starcoder``) the text is first cut before and after every numeric character (``\\p{N}``), then by
  GPT-2's regex. We build that with the ``tokenizers`` library: ``Split(\\p{N}, isolated)`` then ``ByteLevel``.
- Control tokens (``tokenizer.ggml.token_type`` 3, e.g. ``<|im_start|>``) are special tokens of the vocabulary, but
  text never becomes one: ``encode_special_tokens`` is on, so a typed ``"<|im_end|>"`` is split as ordinary text
  (``<``, ``|``, ``im``, …), as the MiniLM tokenizer splits a typed ``"[SEP]"``. Only code that puts a control
  token's id into the ids itself adds one.

Shape legend: pos (tokens of one text).
"""
from __future__ import annotations

import functools

from .tokenize import show_bidi

# Pre-tokenizers we know, by their tokenizer.ggml.pre name: True = cut around every \p{N} before GPT-2's regex.
DIGITS_APART = {"smollm": True, "starcoder": True, "gpt2": False, "default": False}
CONTROL = 3  # tokenizer.ggml.token_type of a control token
SPACE_MARK, NEWLINE_MARK, TAB_MARK = "␣", "↵", "⇥"


@functools.lru_cache(maxsize=1)
def byte_table() -> dict[int, str]:
    """GPT-2's byte → printable character map (all 256 bytes; GPT-2 §2.2, ``bytes_to_unicode``)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)  # the bytes that are not printable: Ā, ā, Ă, … in byte order
            extra += 1
    return table


@functools.lru_cache(maxsize=1)
def _char_to_byte() -> dict[str, int]:
    return {c: b for b, c in byte_table().items()}


def token_bytes(token: str) -> bytes:
    """The raw bytes a byte-level token stands for (``"Ġthe"`` → ``b" the"``); a control token (characters outside
    the byte table, e.g. ``<|im_start|>``) gives its UTF-8 text."""
    table = _char_to_byte()
    if all(c in table for c in token):
        return bytes(table[c] for c in token)
    return token.encode("utf-8")


def build_byte_bpe(tokens: list[str], merges: list[str], pre: str, token_type: list[int] | None = None):
    """A ``tokenizers.Tokenizer`` for a GGUF ``gpt2``-model vocabulary.

    Args:
        tokens: ``tokenizer.ggml.tokens`` (index = id), byte-level strings.
        merges: ``tokenizer.ggml.merges``, ``"left right"`` in priority order.
        pre: ``tokenizer.ggml.pre`` (``"smollm"`` for SmolLM2), see :data:`DIGITS_APART`.
        token_type: ``tokenizer.ggml.token_type``; control tokens (3) are added as special tokens (so
            ``token_to_id`` and decoding know them), never matched in encoded text.

    No BOS is added (SmolLM2's ``add_bos_token`` is false), no normaliser, no padding or truncation.

    Raises:
        ValueError: a pre-tokenizer name we do not know (the message lists the known ones).
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    if pre not in DIGITS_APART:
        raise ValueError(f"unknown pre-tokenizer {pre!r}: known are {sorted(DIGITS_APART)}")
    vocab = {token: i for i, token in enumerate(tokens)}
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=pairs, fuse_unk=False, byte_fallback=False))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if DIGITS_APART[pre]:
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(r"\p{N}"), "isolated"),
                                                           byte_level])
    else:
        tokenizer.pre_tokenizer = byte_level
    tokenizer.decoder = decoders.ByteLevel()
    if token_type is not None:
        specials = [tokens[i] for i, t in enumerate(token_type) if t == CONTROL]
        tokenizer.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    # without this, ``encode`` matches added tokens in the text even with add_special_tokens=False (that flag only
    # stops a post-processor's additions): a prompt that spells "<|endoftext|>" would become id 0
    tokenizer.encode_special_tokens = True
    return tokenizer


def _visible(text: str) -> str:
    # a generated token may hold a bidirectional control, which would mirror the label and what follows it
    return show_bidi(text.replace(" ", SPACE_MARK).replace("\n", NEWLINE_MARK).replace("\t", TAB_MARK))


def token_labels(tokens: list[str]) -> list[str]:
    """Readable labels for the byte-level tokens of one text, in order.

    Spaces show as ``␣`` (so a leading space is visible), newlines as ``↵``, tabs as ``⇥``, a bidirectional
    control as its mark (``⟨RLO⟩``, :func:`~transformer_core.text.tokenize.show_bidi`). A character whose UTF-8
    bytes are spread over several tokens is shown in each of them with its part: ``我`` in two tokens gives
    ``"我 (1/2)"`` and ``"我 (2/2)"``; a token holding whole characters and a part shows both (``"a+我 (1/2)"``).
    Bytes that never complete a character are shown as ``<0xE6>``; never ``"�"``. A control token keeps its text.
    """
    pieces = [token_bytes(t) for t in tokens]
    owner: list[int] = []  # token index of every byte of the text
    for i, piece in enumerate(pieces):
        owner += [i] * len(piece)
    text = b"".join(pieces)
    parts: list[list[str]] = [[] for _ in tokens]
    start = 0
    while start < len(text):
        char, end = _next_char(text, start)
        holders = sorted(set(owner[start:end]))
        if char is None:
            parts[owner[start]].append(f"<0x{text[start]:02X}>")
        elif len(holders) == 1:
            parts[holders[0]].append(_visible(char))
        else:
            for n, i in enumerate(holders, 1):
                parts[i].append(f"{_visible(char)} ({n}/{len(holders)})")
        start = end
    labels = []
    for i, token in enumerate(tokens):
        if all(c in _char_to_byte() for c in token):
            labels.append(_join(parts[i]))
        else:  # a control token
            labels.append(token)
    return labels


def _join(parts: list[str]) -> str:
    """Whole characters run together; a part ``"我 (1/2)"`` is set off by ``+`` from what stands beside it."""
    out = ""
    for part in parts:
        split = part.endswith(")") and " (" in part
        joint = out and (split or out.endswith(")")) and not out.endswith(SPACE_MARK)  # "␣😀 (1/2)", "a+我 (1/2)"
        out += ("+" if joint else "") + part
    return out


def _next_char(text: bytes, start: int) -> tuple[str | None, int]:
    """The character starting at byte ``start`` and the index after it; ``(None, start + 1)`` for a byte that does
    not begin a valid UTF-8 sequence."""
    lead = text[start]
    width = 1 if lead < 0x80 else 2 if 0xC2 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else \
        4 if 0xF0 <= lead < 0xF5 else 0
    if width == 0:
        return None, start + 1
    try:
        return text[start:start + width].decode("utf-8"), start + width
    except UnicodeDecodeError:
        return None, start + 1
