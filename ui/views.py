"""Reusable page parts: the token table, and one stage shown per head with formula and shape."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from transformer_core import figures, serialize
from transformer_core.trace import Trace

from .markdown import plain
from .state import bind_url

FORMULAS = {
    "q": r"Q = X W_Q \;\text{(split into heads)}",
    "k": r"K = X W_K \;\text{(split into heads)}",
    "v": r"V = X W_V \;\text{(split into heads)}",
    "scores": r"S = \frac{Q K^\top}{\sqrt{d_k}}",
    "masked_scores": r"\tilde S_{ij} = \begin{cases} S_{ij} & \text{mask}_{ij} = \text{True} \\ -\infty & \text{otherwise} \end{cases}",
    "weights": r"A = \operatorname{softmax}_{\text{row}}(\tilde S)",
    "context": r"\text{head} = A\,V",
}
STAGE_HELP = {
    "scores": "Every query compared with every key; nothing is hidden yet.",
    "masked_scores": "Blocked cells (blank) are set to −∞ so softmax gives them exactly 0.",
    "weights": "Each row sums to 1 over the visible keys; ⊘ marks a row with no visible key (all 0).",
    "context": "Each query's weighted mix of value vectors: one row per query position.",
    "q": "What each position is looking for.", "k": "What each position offers to be found by.",
    "v": "What each position passes on when attended to.",
}
DIMS = {
    "q": ("batch", "head", "query_pos", "d_k"), "k": ("batch", "head", "key_pos", "d_k"),
    "v": ("batch", "head", "key_pos", "d_k"), "context": ("batch", "head", "query_pos", "d_k"),
    "scores": ("batch", "head", "query_pos", "key_pos"), "masked_scores": ("batch", "head", "query_pos", "key_pos"),
    "weights": ("batch", "head", "query_pos", "key_pos"),
}


def shape_text(stage: str, shape: tuple[int, ...]) -> str:
    """``[batch=2, head=8, query_pos=6, key_pos=6]``."""
    names = DIMS.get(stage, tuple(f"dim{i}" for i in range(len(shape))))
    return "[" + ", ".join(f"{n}={s}" for n, s in zip(names, shape)) + "]"


def token_table(trace: Trace) -> None:
    """Tokens of every sentence, padding included, as a table (text is never interpreted as HTML)."""
    frame = pd.DataFrame(trace.tokens, index=[f"sentence {b}" for b in range(len(trace.tokens))])
    st.dataframe(frame, width="stretch")
    cut = [b for b, t in enumerate(trace.truncated) if t]
    if cut:
        st.info(f"Sentence(s) {cut} were cut to {trace.settings.get('max_tokens')} tokens.", icon=":material/content_cut:")


def stage_csv(trace: Trace, stage: str, *, batch: int, layer: int = 0, key_prefix: str = "") -> None:
    """A download button for one stage's numbers, every head, as CSV (built only when clicked)."""
    st.download_button(
        f"⬇ {figures.STAGE_TITLES.get(stage, stage)} as CSV (all heads)", key=f"{key_prefix}{stage}_{layer}_csv",
        data=lambda: serialize.matrix_to_csv(trace, stage, batch, head=None, layer=layer),
        file_name=figures.figure_filename(stage, None, layer, trace.tokens[batch], "csv"), mime="text/csv",
        on_click="ignore")


def trace_downloads(trace: Trace, *, batch: int, stages: tuple[str, ...], layer: int = 0, key_prefix: str = "") -> None:
    """Whole-trace JSON (reopens the view) and one offline HTML file of the shown figures."""
    stem = figures.figure_filename("trace", None, layer, trace.tokens[batch])

    def html() -> str:
        figs = [figures.stage_figure(trace, s, batch=batch, head=h, layer=layer,
                                     zrange=figures.stage_range(trace, s, batch, layer))
                for s in stages for h in range(trace.stage(s, layer).shape[1])]
        return serialize.figures_to_html(figs, "Attention Explorer", description=" ".join(trace.tokens[batch]))

    c1, c2 = st.columns(2)
    c1.download_button("⬇ Every stage as JSON (tokens, settings, seed, all tensors)", key=f"{key_prefix}json",
                       data=lambda: serialize.trace_to_json(trace), file_name=f"{stem}.json",
                       mime="application/json", on_click="ignore", width="stretch")
    c2.download_button("⬇ These figures as one offline HTML file", key=f"{key_prefix}html", data=html,
                       file_name=f"{stem}.html", mime="text/html", on_click="ignore", width="stretch")


def reopened_trace(key: str, stages: tuple[str, ...], expander: bool = True) -> Trace | None:
    """A trace JSON the learner downloaded earlier and uploads again.

    None if there is none, or if it cannot be shown (a note says why): it must hold ``stages``
    of layer 0 with shapes that match its tokens.
    """
    if expander:
        with st.expander("Reopen a downloaded JSON trace"):
            upload = st.file_uploader("Trace JSON saved from this app", type="json", key=key)
    else:
        upload = st.file_uploader("Reopen a trace JSON saved from this app", type="json", key=key)
    if upload is None:
        return None
    try:
        trace = serialize.trace_from_json(upload.getvalue().decode("utf-8"))
        n_batch, n_pos = len(trace.tokens), len(trace.tokens[0]) if trace.tokens else 0
        if not n_batch or not n_pos or len(trace.lengths) != n_batch:
            raise ValueError("it has no tokens")
        for stage in stages:
            shape = trace.stage(stage).shape
            if shape[0] != n_batch or shape[2] != n_pos:
                raise ValueError(f"stage {stage!r} has shape {list(shape)} for {n_batch}×{n_pos} tokens")
        if trace.mask is not None and trace.mask.shape[-1] != n_pos:
            raise ValueError(f"its mask has {trace.mask.shape[-1]} key positions for {n_pos} tokens")
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, UnicodeDecodeError) as err:
        st.warning(plain(f"That file cannot be shown: {type(err).__name__}: {str(err)[:200]}"),
                   icon=":material/warning:")
        return None
    st.info("Showing the uploaded trace with its own settings; remove the file to return to the sidebar's.",
            icon=":material/folder_open:")
    return trace


def sentence_radio(label: str, sentences: list[str], key: str) -> int:
    """Pick one sentence of the batch (``?sentence=`` in the URL); labels are its first 40 characters, as plain text."""
    bind_url(key, "sentence", range(len(sentences)), 0)
    return st.radio(label, range(len(sentences)), horizontal=True, key=key,
                    format_func=lambda b: plain(f"{b}: {sentences[b][:40]}"))
