"""The head view of the MiniLM and causal pages as one fragment (:mod:`ui.fragments`): a stage, layer, head, cell,
tile or tab click reruns only this part of the page. (The explorer's head view is nearly its whole page: there a
fragment saved no server time, measured with benchmarks/rerun_cpu.py, and it has none.)

A fragment keeps its arguments in the session until the page's next full run, as widget callbacks do, so the
bodies live here and not in the page scripts (a page function would keep the whole run alive: its figures and
tables, tests/test_callbacks_hold_no_run.py). They are given traces (shared with the caches), settings and keys.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from transformer_core.records.trace import Trace

from . import fragments, head_view, views
from . import minilm_moves as moves
from .i18n import _


def minilm(trace: Trace, sentences: tuple[str, ...], padding: bool, batch: int, hide_keys: np.ndarray | None,
           n_layers: int, n_heads: int) -> None:
    """MiniLM's head view of the open layer (computed here, from the cache). ``trace``: the page's tokens and mask."""
    stage, _batch, layer, head, fixed, all_large = head_view.controls(n_heads, "minilm_", n_layers=n_layers,
                                                                      stages=moves.MINILM_STAGES)
    # the overview above draws the norms stage; the token-pair section below follows a clicked cell
    fragments.follow("minilm", norms=stage == "norms", cell=head_view.chosen_cell(trace, batch, "minilm_"))
    layer_trace = moves.layer_trace(sentences, padding, layer, stage)  # with ‖α·f(x)‖ when stage=norms
    head_view.show(layer_trace, batch=batch, layer=layer, stage=stage, head=head, fixed=fixed, all_large=all_large,
                   key_prefix="minilm_", hide_keys=hide_keys, title_prefix=_("layer {layer} · ").format(layer=layer),
                   explain=stage != "norms")
    if stage == "norms":
        moves.norms_panel(layer_trace, batch=batch, layer=layer, head=head)  # the two factors, then the explain panel


def causal(trace: Trace, step: int, n_layers: int, n_heads: int) -> None:
    """The causal page's head view at checkpoint ``step``, with its downloads."""
    stage, _batch, layer, head, fixed, all_large = head_view.controls(n_heads, "causal_", n_layers=n_layers,
                                                                     stages=head_view.STAGES + ("norms",))
    head_view.show(trace, batch=0, layer=layer, stage=stage, head=head, fixed=fixed, all_large=all_large,
                   key_prefix="causal_", title_prefix=_("step {step} · layer {layer} · ").format(step=step, layer=layer),
                   explain=stage != "norms")
    if stage == "norms":
        moves.norms_panel(trace, batch=0, layer=layer, head=head, key_prefix="causal_")  # factors, then explain panel
    with st.expander(_("Downloads: CSV, JSON, offline HTML"), icon=":material/download:"):
        views.stage_csv(trace, stage, batch=0, layer=layer, key_prefix="causal_")
        views.trace_downloads(trace, batch=0, stages=("masked_scores", "weights"), layer=layer, key_prefix="causal_")
