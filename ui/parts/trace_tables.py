"""A trace as tables: the token table, a stage's formula, help and shape, its downloads (CSV, JSON, offline HTML), the sentence picker."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from transformer_core.figures import stage as figures
from transformer_core.figures.slide import trace_html
from transformer_core.records import serialize
from transformer_core.records.trace import Trace

from ..shell.i18n import N_, _, later, ngettext
from ..shell.downloads import download_button
from ..shell.url import bind_url
from .labels import and_list, sentence_label

FORMULAS = {
    "q": r"Q = X W_Q \;\text{(split into heads)}",
    "k": r"K = X W_K \;\text{(split into heads)}",
    "v": r"V = X W_V \;\text{(split into heads)}",
    "scores": r"S = \frac{Q K^\top}{\sqrt{d_k}}",
    "masked_scores": r"\tilde S_{ij} = \begin{cases} S_{ij} & \text{mask}_{ij} = \text{True} \\ -\infty & \text{otherwise} \end{cases}",
    "weights": r"A = \operatorname{softmax}_{\text{row}}(\tilde S)",
    "context": r"\text{head} = A\,V",
    "norms": r"\lVert \alpha_{ij}\, f_h(x_j) \rVert,\quad f_h(x_j) = v_j W_O^h",
}
STAGE_HELP = {
    "scores": N_("Every query compared with every key; nothing is hidden yet."),
    "masked_scores": N_("Blocked cells (blank) are set to −∞ so softmax gives them exactly 0."),
    "weights": N_("Each row sums to 1 over the visible keys; ⊘ marks a row with no visible key (all 0)."),
    "context": N_("Each query's weighted mix of value vectors: one row per query position."),
    "q": N_("What each position is looking for."), "k": N_("What each position offers to be found by."),
    "v": N_("What each position passes on when attended to."),
    "norms": N_("What each key moves into each query: its weight times the length of its value vector after W_O "
                "(Kobayashi et al. 2020). W_O^h = the d_k rows of W_O for head h; the output bias is left out."),
}
DIMS = {
    "q": ("batch", "head", "query_pos", "d_k"), "k": ("batch", "head", "key_pos", "d_k"),
    "v": ("batch", "head", "key_pos", "d_k"), "context": ("batch", "head", "query_pos", "d_k"),
    "scores": ("batch", "head", "query_pos", "key_pos"), "masked_scores": ("batch", "head", "query_pos", "key_pos"),
    "weights": ("batch", "head", "query_pos", "key_pos"), "norms": ("batch", "head", "query_pos", "key_pos"),
}


def shape_text(stage: str, shape: tuple[int, ...]) -> str:
    """``[batch=2, head=8, query_pos=6, key_pos=6]``."""
    names = DIMS.get(stage, tuple(f"dim{i}" for i in range(len(shape))))
    return "[" + ", ".join(f"{n}={s}" for n, s in zip(names, shape)) + "]"


def token_frame(trace: Trace) -> pd.DataFrame:
    """Tokens of every sentence, padding included: one row per sentence (text, never interpreted)."""
    return pd.DataFrame(trace.tokens, index=[_("sentence {b}").format(b=b) for b in range(len(trace.tokens))])


def token_table(trace: Trace) -> None:
    """:func:`token_frame` as a table, and a note naming the sentences that were cut."""
    st.dataframe(token_frame(trace), width="stretch")
    cut = [b for b, t in enumerate(trace.truncated) if t]
    if cut:
        sizes = and_list(sorted({trace.lengths[b] for b in cut}))
        st.info(ngettext("Sentence {numbers} was cut to {sizes} tokens.", "Sentences {numbers} were cut to {sizes} tokens.",
                         len(cut)).format(numbers=and_list(cut), sizes=sizes), icon=":material/content_cut:")


def stage_csv(trace: Trace, stage: str, *, batch: int, layer: int = 0, key_prefix: str = "") -> None:
    """A download button for one stage's numbers, every head, as CSV (built only when clicked)."""
    download_button(
        st, "⬇ " + _("{stage} as CSV (all heads)").format(stage=_(figures.STAGE_TITLES.get(stage, stage))),
        key=f"{key_prefix}{stage}_{layer}_csv",
        data=lambda: serialize.csv_file(serialize.matrix_to_csv(trace, stage, batch, head=None, layer=layer)),
        file_name=figures.figure_filename(stage, None, layer, trace.tokens[batch], "csv"), mime="text/csv")


def trace_downloads(trace: Trace, *, batch: int, stages: tuple[str, ...], layer: int = 0, key_prefix: str = "") -> None:
    """Whole-trace JSON (reopens the view) and one offline HTML file of the shown figures."""
    stem = figures.figure_filename("trace", None, layer, trace.tokens[batch])

    title = _("Attention Explorer")

    def html() -> str:  # one slide per stage and head, each titled with its stage (figures/slide.py)
        return trace_html(trace, stages, batch=batch, layer=layer, title=title)

    c1, c2 = st.columns(2)
    download_button(c1, "⬇ " + _("Every stage as JSON (tokens, settings, seed, all tensors)"), key=f"{key_prefix}json",
                       data=lambda: serialize.trace_to_json(trace), file_name=f"{stem}.json",
                       mime="application/json", width="stretch")
    download_button(c2, "⬇ " + _("These figures as one offline HTML file"), key=f"{key_prefix}html",
                       data=later(html), file_name=f"{stem}.html", mime="text/html", width="stretch")


def sentence_picker(label: str, sentences: list[str], key: str) -> int:
    """Pick one sentence of the batch (``?sentence=`` in the URL); options are plain text (never Markdown),
    each sentence cut at a word boundary."""
    labels = [sentence_label(b, s) for b, s in enumerate(sentences)]
    bind_url(key, "sentence", range(len(sentences)), 0, labels=labels)
    return st.selectbox(label, range(len(sentences)), key=key, width=420, format_func=labels.__getitem__)
