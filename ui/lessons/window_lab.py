"""The masks lab's sliding-window section: a window of width w plus s attention sinks, on the lab's
sentence and head, with the mask written out as numbers and the weight the first token keeps with and without sinks.
``?window=`` and ``?sinks=`` in the URL."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from transformer_core.analysis import masks_lab

from ..parts.numbers import number
from ..parts.window_mask import convention
from ..shell.cache import memo
from ..shell.controls import Settings
from ..shell.i18n import _
from ..shell.lazy import lazy_expander
from ..shell.url import bind_url
from . import lesson_figures as L
from .compute import lab_trace

MAX_SINKS = 4


@memo("lesson_results")
def window_lab(settings: Settings, batch: int, head: int, window: int, sinks: int) -> dict:
    """``{"mask", "masked", "weights", "first", "first_no_sinks"}`` for one sentence and head: the window mask
    ``[query_pos, key_pos]`` (True = may attend), masked scores and weights, and each query's weight on the first key
    with these sinks and with none (:func:`~transformer_core.analysis.masks_lab.window`)."""
    return masks_lab.window(lab_trace(settings), batch, head, window, sinks)


def show(settings: Settings, batch: int, head: int, tokens, rows: list[str]) -> None:
    """The section: w and s pickers, the convention, mask / masked scores / weights, the mask as 0/1, the first
    token's weight with and without the sinks."""
    n = len(tokens)
    st.markdown(_("A **sliding window** lets each token look back only w tokens (Mistral 7B; Longformer's causal "
                  "case), so a long text costs w keys per query instead of all of them. Once the window has moved on, "
                  "the first token is gone, yet trained models put much of their weight there; **attention sinks** "
                  "(StreamingLLM, Xiao et al. 2024) keep the first s tokens in view."))
    left, right = st.columns(2)
    bind_url("masks_window", "window", range(1, n + 1), min(3, n))
    bind_url("masks_sinks", "sinks", range(MAX_SINKS + 1), 1)
    window = left.slider(_("Window w (keys behind and including the query)"), 1, max(n, 2), key="masks_window",
                         disabled=n < 2)
    sinks = right.slider(_("Sinks s (first tokens always kept)"), 0, MAX_SINKS, key="masks_sinks")
    window, sinks = min(int(window), n), int(sinks)
    st.markdown(convention(window, sinks))
    lab = window_lab(settings, batch, head, window, sinks)
    visible = lab["mask"]
    bound = float(np.abs(lab["masked"][visible]).max(initial=0)) or 1.0
    top = float(lab["weights"][visible].max(initial=0)) or 1.0
    cols = st.columns(3)
    L.chart(L.mask_figure(visible, rows, rows, _("Window w = {w}, s = {s} (True = may attend)").format(
        w=window, s=sinks), section="window"), "masks_window_mask", cols[0], "window_mask")
    L.chart(L.pattern_figure(lab["masked"], rows, rows, _("Masked scores (blocked = blank = −∞)"), visible=visible,
                             signed=True, zrange=(-bound, bound), section="window"), "masks_window_masked", cols[1],
            "window_masked_scores")
    L.chart(L.pattern_figure(lab["weights"], rows, rows, _("Weights = softmax by row"), visible=visible,
                             zrange=(0.0, top), section="window"), "masks_window_weights", cols[2], "window_weights")
    far = [i for i in range(n) if i >= window]  # queries whose window no longer reaches the first token
    if far:
        last = far[-1]
        st.markdown(_("Query {i} ({token}) is {d} tokens past the window's reach of the first token: its weight on "
                      "token 0 is **{w}** with s = {s}, and **{bare}** with no sink.").format(
            i=last, token=tokens[last].replace("*", "\\*"), d=last - window + 1, w=number(lab["first"][last], ".3f"),
            s=sinks, bare=number(lab["first_no_sinks"][last], ".3f")))
    else:
        st.caption(_("Every query of this sentence still has the first token in its window: make w smaller than "
                     "{n} to see it drop out.").format(n=n))
    # lazy (ui/shell/lazy.py): its data grid is built, sent and mounted only once opened (``?numbers=1``)
    box = lazy_expander(_("The mask as numbers (1 = may attend, 0 = blocked; rows = queries, columns = keys)"),
                        key="masks_window_numbers", url="numbers")
    if box.open:
        plain = L.plain_labels(tokens)
        box.dataframe(pd.DataFrame(visible.astype(np.int8), index=plain, columns=plain), key="masks_window_table")
        box.code(f"masks.sliding_window_mask({n}, window={window}, sinks={sinks})", language="python")

