"""Shared controls, their limits, and the URL query parameters ⇄ controls round trip.

The shared sidebar is drawn by ``app.py`` on every page, so its widgets (and their
session state) persist when the learner moves between pages. A teacher's link sets them:
``?text=…&d_model=64&n_heads=8&causal=1&padding=1&seed=0``. Bad parameters fall back to
defaults with a visible note (:func:`parse_query_params` is pure and unit-tested).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import streamlit as st

from transformer_core.nn.config import divisors
from transformer_core.text.tokenize import cut_graphemes, normalize_text, visible_bidi, visible_controls

from .failover import moved_this_run
from .i18n import N_, _, language, resend_label
from .markdown import plain
from .nav import find
from .url import BOOL_ALIASES

MAX_CHARS = 4000  # text area limit (MiniLM reads up to 512 WordPiece tokens, ~2,500 characters of English)
MAX_SENTENCES = 6  # lines after the sixth are ignored, with a note
MAX_TOKENS = 128  # tokens per sentence (the toy model and MiniLM)
MAX_HEADS = 16  # head counts offered (more would be more figures than a learner can read)
D_MODEL_CHOICES = (8, 16, 32, 48, 64, 96, 128, 256, 384, 512)
# short enough for the sidebar's box at 1280×720 (~200 px of text: the longer names were cut, en and zh); the
# picker's help says what each one does
TOKENIZERS = {"word": N_("Word-level"), "wordpiece": N_("BERT WordPiece (MiniLM)")}
# the sentences box's default, by the page's language: a word-level pair of two lengths (padding shows), as the
# tutorials' examples; Chinese is cut into words by jieba (小猫 / 坐在 / 垫子 / 上 / 。)
DEFAULT_TEXT = {"en": "The cat sat on the mat.\nThe dog chased the cat!", "zh": "小猫坐在垫子上。\n小狗追着小猫跑！"}
DEFAULTS = {
    "text": DEFAULT_TEXT["en"],
    "tokenizer": "word",
    "d_model": 64,
    "n_heads": 8,
    "causal": False,
    "padding": True,
    "seed": 0,
}
URL_KEYS = ("text", "tokenizer", "d_model", "n_heads", "causal", "padding", "seed")


def applies(page: str) -> tuple[set[str], str]:
    """The shared controls that do something on the page at ``page`` (its url_path) and, when some do not, why
    (a message marked with ``N_``): from the page registry, :data:`ui.shell.nav.PAGES`. An unknown page: all."""
    entry = find(page)
    if entry is None or entry.sidebar is None:
        return set(URL_KEYS), ""
    return set(entry.sidebar), entry.sidebar_note


@dataclass(frozen=True)
class Settings:
    """What the shared controls say (a cache key for the compute functions)."""

    sentences: tuple[str, ...]
    tokenizer: str
    d_model: int
    n_heads: int
    causal: bool
    padding: bool
    seed: int


def head_choices(d_model: int) -> list[int]:
    """Head counts that divide d_model (d_k = d_model / n_heads must be a whole number)."""
    return [h for h in divisors(d_model) if h <= MAX_HEADS]


def bidi_note(marks: list[str]) -> str:
    """The note for text whose direction controls are shown as ``marks`` (``["⟨RLO⟩"]``)."""
    return _("Direction controls in the text are shown as {marks}: they would reverse the text after them, the "
             "page's own numbers included.").format(marks=" ".join(marks))


def split_sentences(text: str) -> tuple[tuple[str, ...], list[str]]:
    """Non-blank lines as sentences (at most MAX_SENTENCES) and notes about what was changed or cut.

    The text entrance of every page: the text goes through
    :func:`transformer_core.text.tokenize.normalize_text` first (NFC; control characters shown as
    control pictures ␀ ␁ ␛ and direction controls as ⟨RLO⟩, each with a note), so labels, pickers and both models
    see the same text.
    A text longer than MAX_CHARS is cut between two user-perceived characters.
    """
    notes = []
    controls, bidi = visible_controls(text), visible_bidi(text)
    text = normalize_text(text)
    if controls:
        notes.append(_("Control characters in the text are shown as {pictures} (Unicode control pictures).")
                     .format(pictures=" ".join(controls)))
    if bidi:
        notes.append(bidi_note(bidi))
    if len(text) > MAX_CHARS:
        notes.append(_("Text cut to its first {n} characters.").format(n=MAX_CHARS))
        text = cut_graphemes(text, MAX_CHARS)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > MAX_SENTENCES:
        notes.append(_("Only the first {n} of {total} lines are used.").format(n=MAX_SENTENCES, total=len(lines)))
        lines = lines[:MAX_SENTENCES]
    return tuple(lines), notes


def default_sentences(lang: str) -> tuple[str, ...]:
    """The sentences of the sentences box's default text in ``lang``."""
    return tuple(DEFAULT_TEXT.get(lang, DEFAULT_TEXT["en"]).splitlines())


def _whole(raw) -> int | None:
    """A URL's whole number: ``64``, also written ``64.0`` or ``6.4e1`` (equal numbers are accepted), else None."""
    text = str(raw).strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() and abs(value) < 2**53 else None


def parse_query_params(params: Mapping[str, str | list[str]], lang: str = "en") -> tuple[dict, list[str]]:
    """Validate URL parameters; return settings (defaults where missing or bad; the text in ``lang``) and notes.

    Never raises: every bad value is replaced by its default and named in a note.
    """
    values, notes = {**DEFAULTS, "text": DEFAULT_TEXT.get(lang, DEFAULT_TEXT["en"])}, []

    def get(key):
        raw = params.get(key)
        return raw[-1] if isinstance(raw, list) and raw else raw

    def bad(key, raw, why):
        notes.append(_("URL parameter {param} ignored ({why}); using {default}.").format(
            param=plain(f"{key}={str(raw)[:40]}"), why=why, default=repr(DEFAULTS[key])))

    if (text := get("text")) is not None:
        values["text"] = str(text)[:MAX_CHARS]
        if len(str(text)) > MAX_CHARS:
            notes.append(_("URL text cut to {n} characters.").format(n=MAX_CHARS))
    if (raw := get("tokenizer")) is not None:
        if str(raw) in TOKENIZERS:
            values["tokenizer"] = str(raw)
        else:
            bad("tokenizer", raw, _("choose one of {options}").format(options=list(TOKENIZERS)))
    for key in ("d_model", "seed"):
        raw = get(key)
        if raw is None:
            continue
        # d_model is one of a list, so a number equal to one is taken (32.0); a seed is typed as a whole number
        try:
            number = int(str(raw).strip()) if key == "seed" else _whole(raw)
        except ValueError:
            number = None
        if number is None:
            bad(key, raw, _("not a whole number"))
            continue
        if key == "d_model" and number not in D_MODEL_CHOICES:
            bad(key, raw, _("choose one of {options}").format(options=list(D_MODEL_CHOICES)))
        elif key == "seed" and not 0 <= number <= 2**31 - 1:
            bad(key, raw, _("must be between 0 and 2147483647"))
        else:
            values[key] = number
    if (raw := get("n_heads")) is not None:
        number = _whole(raw)
        choices = head_choices(values["d_model"])
        if number in choices:
            values["n_heads"] = number
        else:
            fallback = max(h for h in choices if h <= DEFAULTS["n_heads"])
            values["n_heads"] = fallback
            notes.append(_("URL parameter {param} ignored (must divide d_model={d_model}: one of {choices}); "
                           "using {fallback}.").format(param=plain(f"n_heads={str(raw)[:40]}"),
                                                       d_model=values["d_model"], choices=choices, fallback=fallback))
    elif values["n_heads"] not in head_choices(values["d_model"]):
        values["n_heads"] = max(head_choices(values["d_model"]))
    for key in ("causal", "padding"):
        raw = get(key)
        if raw is None:
            continue
        word = str(raw).strip().lower()
        if word in BOOL_ALIASES:  # the words every on/off URL choice takes (ui/shell/url.py)
            values[key] = BOOL_ALIASES[word]
        else:
            bad(key, raw, _("use 1 or 0"))
    return values, notes


def to_query_params(values: Mapping) -> dict[str, str]:
    """Settings → URL parameters (booleans as 1/0)."""
    out = {}
    for key in URL_KEYS:
        v = values[key]
        out[key] = ("1" if v else "0") if isinstance(v, bool) else str(v)
    return out


def _init_from_url(page: str = "") -> None:
    """Seed the shared controls from the URL, once per session.

    On a moved session's first run (ui/shell/failover.py) the browser resends the values of the controls it
    can change; those count (one may be the click that caused the run). Every other control takes the URL's
    value, not its widget default: the controls greyed out on this page (the browser may resend their
    defaults, and a disabled control cannot have been clicked) and any control whose value was not resent
    (once, /causal came back with the text empty, d_model 8 and n_heads 1, and wrote them into the URL)."""
    if "_url_read" in st.session_state:
        return
    values, notes = parse_query_params(st.query_params.to_dict(), language())
    if moved_this_run():
        from .url import sent_by_browser

        live = applies(page)[0]
        for key, value in values.items():
            if key not in live or not sent_by_browser(f"shared_{key}"):
                st.session_state[f"shared_{key}"] = value
        st.session_state["_url_read"] = True  # the notes were shown when the link was first opened
        return
    for key, value in values.items():
        st.session_state.setdefault(f"shared_{key}", value)
    st.session_state["_url_notes"] = notes
    st.session_state["_url_read"] = True


def _fix_heads() -> None:
    """Keep n_heads valid when d_model changes (closest smaller divisor)."""
    choices = head_choices(st.session_state["shared_d_model"])
    current = st.session_state.get("shared_n_heads", DEFAULTS["n_heads"])
    if current not in choices:
        st.session_state["shared_n_heads"] = max(h for h in choices if h <= current) if current > 0 else 1
        st.session_state["_heads_note"] = _("n_heads={n} does not divide d_model={d}; switched to {new}.").format(
            n=current, d=st.session_state["shared_d_model"], new=st.session_state["shared_n_heads"])


def sidebar(page: str = "") -> Settings:
    """Draw the shared controls in the sidebar and keep the URL in step with them.

    ``page``: the page's url_path; controls that do nothing there (:func:`applies`) are drawn disabled with
    the reason (a disabled widget cannot rerun the page, and keeps its value for the other pages)."""
    _init_from_url(page)
    ss = st.session_state
    live, why = applies(page)
    off = {key: key not in live for key in URL_KEYS}
    with st.sidebar:
        from .language_widgets import switch

        switch()  # English / 中文, first: the learner may not read the other labels yet
        if ss.get("shared_text") in DEFAULT_TEXT.values():  # the untouched example follows the language switch
            ss["shared_text"] = DEFAULT_TEXT.get(language(), DEFAULT_TEXT["en"])
        if why:
            st.caption(_(why))
        # no max_chars: the browser would silently refuse a longer paste; we cut it with a note instead
        st.text_area(_("Sentences (one per line)"), key="shared_text", height=110, disabled=off["text"],
                     help=_("Each line is one sentence of the batch (up to {n}, {chars} characters in all); shorter "
                            "sentences are padded with [PAD].").format(n=MAX_SENTENCES, chars=MAX_CHARS))
        resend_label("shared_tokenizer")
        names = {t: _(label) for t, label in TOKENIZERS.items()}  # now: a format_func may run outside this run
        st.selectbox(_("Tokenizer"), list(TOKENIZERS), format_func=names.get, key="shared_tokenizer",
                     disabled=off["tokenizer"],
                     help=_("**Word-level**: each word, punctuation mark and emoji is one token; Chinese is cut into "
                            "words. **BERT WordPiece**: MiniLM's vocabulary, where a rare word is split into pieces "
                            "(“##” marks a piece that continues a word)."))
        st.toggle(_("Causal mask"), key="shared_causal", help=_("Each query sees only itself and earlier keys."),
                  disabled=off["causal"])
        st.toggle(_("Padding mask"), key="shared_padding", help=_("Hide the [PAD] key columns."),
                  disabled=off["padding"])
        st.selectbox("d_model", D_MODEL_CHOICES, key="shared_d_model", on_change=_fix_heads, disabled=off["d_model"],
                     help=_("Width of every token vector in the toy model."))
        _fix_heads()
        choices = head_choices(ss["shared_d_model"])
        st.selectbox("n_heads", choices, key="shared_n_heads", disabled=off["n_heads"],
                     help=_("Only divisors of d_model are offered: each head gets d_head = d_model / n_heads "
                            "dimensions (the tutorials' d_k), and the heads must split d_model exactly."))
        st.caption(_("d_head = {d} / {h} = {d_head} per head").format(
            d=ss["shared_d_model"], h=ss["shared_n_heads"], d_head=ss["shared_d_model"] // ss["shared_n_heads"]))
        st.number_input(_("Random seed"), min_value=0, max_value=2**31 - 1, step=1, key="shared_seed",
                        disabled=off["seed"],
                        help=_("Seeds the toy model's weights and token embeddings."))
        st.radio(_("Chart camera button saves"), ["png", "svg"], key="shared_image_format", horizontal=True,
                 help=_("The camera icon above each chart saves it as drawn, at twice its size, in this format."))
        st.caption(_("Mask convention: **True = may attend** (as `torch.nn.functional."
                     "scaled_dot_product_attention`). Blocked scores become −∞."))
    for note in ss.pop("_url_notes", []) + ([ss.pop("_heads_note")] if "_heads_note" in ss else []):
        st.warning(note, icon=":material/warning:")
    values = {k: ss[f"shared_{k}"] for k in DEFAULTS}
    # key by key: a page's own view parameters (stage, head, …) stay in the URL beside these; one update, one message
    changed = {key: value for key, value in to_query_params(values).items() if st.query_params.get(key) != value}
    if changed:
        st.query_params.update(changed)
    sentences, notes = split_sentences(values["text"])
    for note in notes:
        st.info(note, icon=":material/content_cut:")
    return Settings(sentences, values["tokenizer"], values["d_model"], values["n_heads"],
                    values["causal"], values["padding"], int(values["seed"]))


def current() -> Settings:
    """The settings the entrypoint's sidebar stored for this run.

    A page run without the entrypoint (a fresh server's legacy first run) reruns through it.
    """
    if "_settings" not in st.session_state:
        from .nav import leave_legacy_mode

        leave_legacy_mode(rerun=True)
        st.rerun()
    return st.session_state["_settings"]
