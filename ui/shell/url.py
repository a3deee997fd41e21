"""URL binding of a page's own widgets (``?stage=…``, ``?head=…``): read on a fresh session, written back on every run."""
from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Mapping, Sequence

import streamlit as st

from .failover import moved_this_run
from .i18n import _, resend_label
from .markdown import plain


def sent_by_browser(key: str) -> bool:
    """Whether the browser sent a value for the widget with ``key`` in this run's widget states.

    Only needed on a moved session's first run (ui/shell/failover.py), before the widget is drawn: the
    session is new, so the state is held under the widget's id (``$$ID-<hash>-<key>``, Streamlit's
    ``_compute_element_id``) and cannot be read by key until the widget is registered."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    try:
        states = ctx.session_state._state._new_widget_state.states
    except AttributeError:  # another Streamlit's internals: assume it was sent (the widget's own value counts)
        return True
    return any(str(wid).endswith(f"-{key}") for wid in states)


_MISSING = object()
MISSING = _MISSING  # what :func:`match` returns for a value that names no option
# the words an on/off URL choice takes (?causal=, ?padding=, and every True/False option of bind_url), any case
BOOL_ALIASES = {**dict.fromkeys(("1", "true", "on", "yes"), True), **dict.fromkeys(("0", "false", "off", "no"), False)}


def _number(text) -> float | None:
    try:
        value = float(str(text).strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def match(raw, options: Sequence, to_text: Callable = str, aliases: Mapping | None = None):
    """The option ``raw`` (a URL value) names, else ``_MISSING``: its text, or a number equal to a numeric option
    (``temp=1.0``, ``0.50`` or ``1e2`` for 1, 0.5 and 100), or a number ``aliases`` maps to an option
    (``top_p=1`` keeps every token: ``{1: "off"}``), or a word it maps, in any case (:data:`BOOL_ALIASES`), or the
    one option whose text it is in another case (``section=positions`` names ``Positions``)."""
    text = str(raw)
    for option in options:
        if to_text(option) == text:
            return option
    # a name in another case (section=positions, model=SmolLM2), as the on/off words are taken: the option is
    # written back in its own spelling; only when exactly one option reads so (a token picker may hold "The" and "the")
    same = [o for o in options if to_text(o).strip().casefold() == text.strip().casefold()]
    if len(same) == 1:
        return same[0]
    word = text.strip().lower()
    for value, option in (aliases or {}).items():
        if isinstance(value, str) and value == word:
            return option
    number = _number(text)
    if number is None:
        return _MISSING
    for value, option in (aliases or {}).items():
        if not isinstance(value, str) and float(value) == number:
            return option
    for option in options:
        if isinstance(option, int | float) and not isinstance(option, bool) and float(option) == number:
            return option
    return _MISSING


def describe(options: Sequence, to_text: Callable = str, most: int = 12, longest: int = 40) -> str:
    """The valid values for a note, in full: a run of whole numbers as ``first–last`` (``0–31``), else every
    option, or the first ones, ``…`` and the last when there are more than ``most`` (a note once listed
    only the first 12, with no ``…``). An option longer than ``longest`` characters shows its start and ``…`` (an
    operator's 300-character model label filled the note)."""
    texts = [to_text(o) for o in options]
    texts = [t if len(t) <= longest else t[:longest - 1].rstrip() + "…" for t in texts]
    if len(texts) > 2 and all(t.lstrip("-").isdigit() for t in texts):
        numbers = [int(t) for t in texts]
        if numbers == list(range(numbers[0], numbers[0] + len(numbers))):
            return f"{numbers[0]}–{numbers[-1]}"
    if len(texts) <= most:
        return ", ".join(texts)
    return ", ".join(texts[:most - 2]) + ", …, " + texts[-1]


def note_ignored(url: str, raw, options: Sequence, default, to_text: Callable = str, note_to=None) -> None:
    """The warning for ``?{url}={raw}`` naming none of ``options``: the value (its first 40 characters), the valid
    ones (:func:`describe`) and the ``default`` used instead, in ``note_to`` (default: the page)."""
    said = str(raw)[:40] + ("…" if len(str(raw)) > 40 else "")
    note = _("URL parameter {param} ignored (choose one of {options}); using {default}.")
    (note_to or st).warning(note.format(param=plain(f"{url}={said}"), options=plain(describe(options, to_text)),
                                        default=plain(to_text(default))), icon=":material/warning:")


def _from_url(url: str, options: Sequence, default, to_text: Callable, aliases: Mapping | None = None):
    found = match(st.query_params.get(url), options, to_text, aliases)
    return default if found is _MISSING else found


def bind_url(key: str, url: str, options: Sequence, default, to_text: Callable = str,
             labels: Sequence[str] | None = None, aliases: Mapping | None = None, note_to=None):
    """Seed the widget state ``st.session_state[key]`` from ``?url=…`` and keep the URL in step.

    Call just before creating the widget with ``key``. The URL is read only while the widget has
    no state yet (a fresh session or a page's first run), and only a value whose text is one of
    ``options`` is taken; anything else falls back to ``default`` with a visible note. The value
    left in session state is then written back, so a copied URL reopens the same view.

    Returns the value to use this run, before the widget is drawn: read it from the return value, not from
    ``st.session_state[key]``, which a moved session's first run may not have yet (it raised KeyError
    'minilm_pair'). On that run (ui/shell/failover.py) the URL fills in every widget the browser did not
    resend; a widget it did resend keeps the browser's value (the click that caused the run), and
    :func:`settle_moved_run` reruns the page if that value differs from the one returned here.

    ``note_to``: where a refused value's note goes (a container higher on the page, drawn by the same run and not
    in a fragment; default: here).

    ``labels``: the option texts the widget shows, when they depend on the learner's text (a
    sentence or token picker). When they differ from the last run's, the value is assigned again,
    so Streamlit sends it with the new label: a keyed selectbox whose options change under an
    unchanged value otherwise keeps showing the old label in the browser (STREAMLIT-NOTES).
    """
    ss = st.session_state
    if aliases is None and all(isinstance(o, bool) for o in options):
        aliases = BOOL_ALIASES  # every on/off choice takes the words ?causal= takes (yes, on, true, …)
    if moved_this_run() and key not in ss:  # a new session that already shows a page (ui/shell/failover.py)
        found = _from_url(url, options, default, to_text, aliases)
        if sent_by_browser(key):  # the widget gets the browser's value; sections read this one until it is drawn
            ss.setdefault("_moved_fallback", {})[key] = found
            return found
        ss[key] = found  # not resent (e.g. a widget of a section drawn later): the URL's value, not the default
    resend_label(key)  # after a language switch the value is re-sent with its translated label (ui/shell/i18n.py)
    if labels is not None:
        seen, shown = f"_labels_{key}", hash(tuple(labels))
        relabel = key in ss and ss.get(seen) not in (None, shown)
        ss[seen] = shown
        if relabel:
            ss[key] = ss[key] if ss[key] in options else default  # re-sent with the current label
    if key not in ss and (raw := st.query_params.get(url)) is not None:
        if (found := match(raw, options, to_text, aliases)) is not _MISSING:
            ss[key] = found
        else:
            note_ignored(url, raw, options, default, to_text, note_to)
    if ss.get(key, default) not in options:  # e.g. head 7 after n_heads went down to 4
        ss[key] = default
    value = ss.setdefault(key, default)
    text = to_text(value)
    # The run's URL is the one the browser sent with its rerun request, which may predate our last write (a box
    # opened and closed at once: the request says tables=0 while ``tables=1`` is still on its way to the browser).
    # So write when the browser's URL differs or when what this session last wrote differs.
    sent = ss.setdefault("_url_sent", {})
    if st.query_params.get(url) != text or sent.get(url, text) != text or len(st.query_params.get_all(url)) > 1:
        if (pending := getattr(_BATCH, "pending", None)) is not None:  # in batch(): written with the others, at once
            pending[url] = text
        else:
            st.query_params[url] = text
    sent[url] = text
    return value


_BATCH = threading.local()  # the script thread's open batch (a dict of pending URL writes), if any


@contextlib.contextmanager
def batch():
    """The URL writes of the :func:`bind_url` calls inside go out as one ``st.query_params.update``: Streamlit sends a
    message for each change of the address (a first visit of the explorer sent 17 of them). Only around
    :func:`bind_url` calls: a direct ``st.query_params[…]`` write inside would be overwritten by the batch's."""
    if getattr(_BATCH, "pending", None) is not None:  # nested: the outer batch writes them
        yield
        return
    _BATCH.pending = {}
    try:
        yield
    finally:
        pending, _BATCH.pending = _BATCH.pending, None
        if pending:
            st.query_params.update(pending)


def settle_moved_run() -> None:
    """End of a moved session's first run: rerun if a resent widget's value differs from what
    :func:`bind_url` returned for it (the sections above it used the URL's value, the widget shows the
    click's). Call from the entrypoint after the page has run; the rerun reads session state as usual."""
    ss = st.session_state
    if not moved_this_run():
        return
    read = ss.pop("_moved_fallback", {})
    if any(key in ss and ss[key] != value for key, value in read.items()):
        ss["_moved_rerun"] = True  # the notice stays on the page (ui.shell.failover.notice_if_moved)
        st.rerun()


def fallback(key: str):
    """What a widget bound by :func:`bind_url` should start from when its state is unknown, else None.

    Only on a moved session's first run (ui/shell/failover.py) is a widget's state unknown before it is drawn:
    its key is not in ``st.session_state`` until then, and the browser may not have sent its value at all.
    Pass this as the widget's own default (``default=``/``value=``), which Streamlit uses only when the
    browser sent nothing, so a click still counts and the URL fills in the rest."""
    if moved_this_run() and key not in st.session_state:
        return st.session_state.get("_moved_fallback", {}).get(key)
    return None


def value(key: str):
    """A bound widget's value before the widget is drawn this run: its state, or :func:`fallback`."""
    return st.session_state[key] if key in st.session_state else fallback(key)
