"""The MiniLM page's head view as one fragment (:mod:`ui.shell.fragments`): a stage, layer, head, cell,
tile or tab click reruns only this part of the page. (The explorer's head view is nearly its whole page: there a
fragment saved no server time, measured with benchmarks/rerun_cpu.py, and it has none.)

A fragment keeps its arguments in the session until the page's next full run, as widget callbacks do, so the
bodies live here and not in the page scripts (a page function would keep the whole run alive: its figures and
tables, tests/test_callbacks_hold_no_run.py). They are given traces (shared with the caches), settings and keys.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from transformer_core.figures.stage import chart_config, figure_filename
from transformer_core.records.trace import Trace

from ..parts import ablation_controls as ablation
from ..parts import head_view
from ..parts.moves_panels import norms_panel
from ..shell.chart import chart, image_format
from ..shell import fragments
from ..shell.i18n import _
from . import moves


def minilm(trace: Trace, sentences: tuple[str, ...], padding: bool, batch: int, hide_keys: np.ndarray | None,
           n_layers: int, n_heads: int, overview: go.Figure, open_head: dict) -> None:
    """MiniLM's overview of every head (``overview``, built by the page), then the head view of the open layer
    (computed here, from the cache). ``trace``: the page's tokens and mask; ``open_head``: the session keys a tile
    click sets (``layer_key``, ``head_key``, ``n_heads``).

    A click on a tile opens its head by rerunning only this part. With "Click tiles to ablate heads" on, the click
    changes the ablated heads that the page's ablation section reads: then the whole page reruns."""
    chart(overview, key="minilm_overview", selection_mode="points",
          on_select=ablation.tile_callback("minilm_overview", open_head, "minilm_", n_layers),
          config=chart_config(figure_filename("overview", None, None, trace.tokens[batch]), image_format()))
    clicked = st.empty()  # what a tile click did: its answer is below the fold at 1280×720
    stage, _batch, layer, head, fixed, all_large = head_view.controls(n_heads, "minilm_", n_layers=n_layers,
                                                                      stages=moves.MINILM_STAGES)
    ablation.click_note(clicked, "minilm_", n_layers, n_heads, layer, head)
    # the overview draws the norms stage (built by the page); the token-pair section below follows a clicked cell,
    # the ablation section the heads a tile click ablates
    fragments.follow("minilm", norms=stage == "norms", cell=head_view.chosen_cell(trace, batch, "minilm_"),
                     ablated=tuple(st.session_state.get("minilm_ablate") or ()))
    layer_trace = moves.layer_trace(sentences, padding, layer, stage)  # with ‖α·f(x)‖ when stage=norms
    head_view.show(layer_trace, batch=batch, layer=layer, stage=stage, head=head, fixed=fixed, all_large=all_large,
                   key_prefix="minilm_", hide_keys=hide_keys, title_prefix=_("layer {layer} · ").format(layer=layer),
                   explain=stage != "norms")
    if stage == "norms":
        norms_panel(layer_trace, batch=batch, layer=layer, head=head)  # the two factors, then the explain panel
