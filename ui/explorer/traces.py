"""Where the explorer's trace comes from: the toy model (with its value-weighted norms), or a reopened upload."""
from __future__ import annotations

import streamlit as st

from transformer_core.analysis.value_norms import with_norms
from transformer_core.records import serialize
from transformer_core.records.schema import Limits
from transformer_core.records.trace import Trace

from ..parts.toy_compute import toy_trace
from ..shell.cache import memo
from ..shell.controls import MAX_HEADS, MAX_SENTENCES, MAX_TOKENS
from ..shell.i18n import _
from ..shell.markdown import plain

# The one upload limit, in bytes: 32 MB = 32,000,000 bytes. The browser refuses a larger file (Streamlit's
# uploader counts server.maxUploadSize = 32 in decimal MB), Streamlit's server and nginx admit 32 MiB (the
# file plus its multipart envelope) and this check refuses anything above it where those do not run
# (tests/test_upload_limit.py reads all three). ≥ 2 bytes per number bounds the numbers.
UPLOAD_MB = 32
UPLOAD_BYTES = UPLOAD_MB * 10**6
UPLOAD_HELP = f"At most {UPLOAD_MB} MB ({UPLOAD_BYTES:,} bytes)."
UPLOAD_LIMITS = Limits(sentences=MAX_SENTENCES, tokens=MAX_TOKENS, heads=MAX_HEADS, numbers=UPLOAD_BYTES // 2,
                       size_bytes=UPLOAD_BYTES)

@memo("toy_traces")
def toy_with_norms(settings, n_kv_heads: int | None = None, window: int | None = None, sinks: int = 0) -> Trace:
    """The explorer's toy trace (:func:`ui.parts.toy_compute.toy_trace`, with the explorer's shared key/value heads
    and sliding window) plus ``norms`` of every layer (its seeded W_O)."""
    plain = n_kv_heads is None and window is None  # the trace other pages share, under the same cache key
    return with_norms(toy_trace(settings) if plain else
                      toy_trace(settings, n_kv_heads=n_kv_heads, window=window, sinks=sinks))


def cut_notes(trace: Trace, settings) -> list[str]:
    """One line for each sentence cut to MAX_TOKENS: how many tokens it has and how many are shown (a
    note inside the collapsed tokens box below the figures goes unseen)."""
    from transformer_core.text.tokenize import TOKENIZERS, sentence_list

    typed = sentence_list(list(settings.sentences))
    notes = []
    for b, cut in enumerate(trace.truncated):
        if cut and b < len(typed):
            n = len(TOKENIZERS[settings.tokenizer](typed[b]))
            notes.append(_("Sentence {b} has {n} tokens: only its first {kept} are shown (at most {limit} tokens a "
                           "sentence).").format(b=b, n=n, kept=trace.lengths[b], limit=MAX_TOKENS))
    return notes


def norm_stages(trace: Trace) -> tuple[str, ...]:
    """``("norms",)`` when ``trace`` holds value-weighted norms (a reopened JSON trace has none: its W_O is unknown)."""
    return ("norms",) if any(k.endswith(".attention.norms") for k in trace.stages) else ()


def read_upload(data: bytes, stages: tuple[str, ...]) -> tuple[Trace | None, str | None]:
    """``(trace, None)`` for a trace JSON the app can show, else ``(None, why)``: never raises.

    One validation step (:func:`transformer_core.records.serialize.trace_from_json` with the limits of
    typed text: at most MAX_SENTENCES sentences of MAX_TOKENS tokens and MAX_HEADS heads)
    checks every field, shape and string; layer 0 must hold ``stages``. ``why`` is one line of
    plain text that may quote the file: show it through :func:`ui.shell.markdown.plain`.
    """
    try:
        return serialize.trace_from_json(data, limits=UPLOAD_LIMITS, required=stages), None
    except ValueError as err:
        return None, str(err)


def reopened_trace(key: str, stages: tuple[str, ...], expander: bool = True) -> Trace | None:
    """A trace JSON the learner downloaded earlier and uploads again.

    None if there is none, or if it cannot be shown (a note says why, as plain text): see :func:`read_upload`.
    """
    if expander:
        with st.expander(_("Reopen a downloaded JSON trace")):
            upload = st.file_uploader(_("Trace JSON saved from this app"), type="json", key=key,
                                      help=_("At most {mb} MB ({n} bytes).").format(mb=UPLOAD_MB, n=f"{UPLOAD_BYTES:,}"))
    else:
        upload = st.file_uploader(_("Reopen a trace JSON saved from this app"), type="json", key=key,
                                  help=_("At most {mb} MB ({n} bytes).").format(mb=UPLOAD_MB, n=f"{UPLOAD_BYTES:,}"))
    if upload is None:
        return None
    trace, problem = read_upload(upload.getvalue(), stages)
    if trace is None:
        st.warning(_("That file cannot be shown: {problem}").format(problem=plain(problem)), icon=":material/warning:")
        return None
    st.info(_("Showing the uploaded trace with its own settings; remove the file to return to the sidebar's."),
            icon=":material/folder_open:")
    return trace
