"""The causal page's heads: the overview faded by a head type, and the head view as one fragment (see
:mod:`ui.minilm.head_fragment` for why a fragment's body lives in a module)."""
from __future__ import annotations

import numpy as np
import streamlit as st

from transformer_core.analysis.causal_sequence import sequence_scores
from transformer_core.analysis.head_types import SCORES, SOURCES, head_types
from transformer_core.figures.moves import score_overlay
from transformer_core.figures.overview import mark_ablated, overview_figure
from transformer_core.records.trace import Trace

from ..parts import head_view, trace_tables
from ..parts.moves_panels import norms_panel
from ..shell.cache import per_trace
from ..shell.chart import spec
from ..shell.i18n import N_, _

PERIOD_SOURCES = {  # the page's own scores (the "Head scores" table's): which definition they follow
    "previous_token": N_("mean weight on key = query − 1, over the queries that have one"),
    "induction": N_("period diagonal: mean weight on key = query − period + 1 over the second period's queries"),
}


def causal_overview(fig, trace: Trace, period: int | None, color: str) -> tuple:
    """The causal page's overview faded by ``color``, and the caption to show under its controls (or None).
    Previous-token and induction are the page's own scores
    (:func:`~transformer_core.analysis.causal_sequence.sequence_scores`: key = query − 1, key = query − period + 1);
    the others are :mod:`~transformer_core.analysis.head_types`'s (TransformerLens's duplicate-token pattern, self,
    broadness). Draws nothing itself, so the figure can be cached."""
    if color == "none":
        return fig, None
    if color in ("previous_token", "induction"):
        scores = np.array(sequence_scores(trace, period)[color], dtype=float)  # [layer][head]; None without a period
        source = PERIOD_SOURCES[color]
    else:
        table = head_types(trace, 0, (color,))
        scores = table[color].to_numpy().reshape(trace.n_layers, -1)
        source = SOURCES[color]
    if np.isnan(scores).all():
        n = trace.stage("weights", 0).shape[-1]
        if color == "previous_token" or n < 2:  # the real reason (seq=5 once said "does not repeat")
            why = _("the sequence has one token, so no query has a token before it")
        elif period is None:
            why = _("the sequence does not repeat")
        else:
            why = _("the sequence is too short for its period: an induction score needs at least {need} tokens "
                    "(the period, {period}, and two more); it has {n}").format(need=period + 2, period=period, n=n)
        return fig, _("No {score} score: {why}.").format(score=_(SCORES[color]), why=why)
    note = _("Tiles fade as their **{score}** score on this sequence ({source}) falls; a red frame marks 0.25 or "
             "more (thicker = higher).").format(score=_(SCORES[color]), source=_(source))
    return score_overlay(fig, np.nan_to_num(scores), SCORES[color], source), note


def overview(trace: Trace, period: int | None, color: str, ablated: tuple, clicking: bool) -> tuple:
    """``(chart JSON, caption or None)`` of the causal page's overview: faded by ``color``, the ``ablated`` heads
    framed (``clicking``: the hover says a click ablates). Built once per trace and choice, then shared
    (:func:`ui.shell.cache.per_trace`): the figure (its shapes above all) is slow to build in plotly.py."""
    def build():
        fig, note = causal_overview(overview_figure(trace, 0, height=380), trace, period, color)
        if ablated or clicking:
            fig = mark_ablated(fig, ablated, clicking)
        return spec(fig), note

    return per_trace(trace, ("causal_overview", period, color, ablated, clicking), build)


def causal(trace: Trace, step: int, n_layers: int, n_heads: int) -> None:
    """The causal page's head view at checkpoint ``step``, with its downloads."""
    stage, _batch, layer, head, fixed, all_large = head_view.controls(n_heads, "causal_", n_layers=n_layers,
                                                                     stages=head_view.STAGES + ("norms",))
    head_view.show(trace, batch=0, layer=layer, stage=stage, head=head, fixed=fixed, all_large=all_large,
                   key_prefix="causal_", title_prefix=_("step {step} · layer {layer} · ").format(step=step, layer=layer),
                   explain=stage != "norms")
    if stage == "norms":
        norms_panel(trace, batch=0, layer=layer, head=head, key_prefix="causal_")  # factors, then explain panel
    with st.expander(_("Downloads: CSV, JSON, offline HTML"), icon=":material/download:"):
        trace_tables.stage_csv(trace, stage, batch=0, layer=layer, key_prefix="causal_")
        trace_tables.trace_downloads(trace, batch=0, stages=("masked_scores", "weights"), layer=layer, key_prefix="causal_")
