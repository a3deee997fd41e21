"""The head view shared by the explorer and the MiniLM page: one stage, one head in focus, every head at a glance.

Two Plotly charts, whatever the number of heads (the browser pays per chart, not per cell):
the focused head large (:func:`transformer_core.figures.stage.stage_figure`) and all heads of the
stage tiled in one figure (:func:`transformer_core.figures.heads.heads_figure`; click a tile to
focus it). Stage, head, colour scale and "all heads large" live in the URL (``stage``,
``head``, ``scale``, ``all``), so a copied link reopens the same view.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from transformer_core.figures import stage as figures
from transformer_core.figures.heads import heads_figure, picked_head
from transformer_core.records.trace import Trace

from . import cache, explain_panel
from .i18n import N_, _
from .labels import sentence_label
from .state import bind_url, fallback
from .views import FORMULAS, STAGE_HELP, shape_text

STAGES = ("q", "k", "v", "scores", "masked_scores", "weights", "context")
STAGE_LABELS = {"q": "Q", "k": "K", "v": "V", "scores": N_("scores"), "masked_scores": N_("masked"),
                "weights": N_("weights"), "context": N_("context"), "norms": "norms"}


def controls(n_heads: int, key_prefix: str, stages: tuple[str, ...] = STAGES, n_layers: int = 1,
             sentences: list[str] | None = None) -> tuple[str, int, int, int, bool, bool]:
    """``(stage, batch, layer, head, fixed_scale, all_large)`` from one compact row of controls bound to the URL.

    A sentence picker (``?sentence=``) is shown when ``sentences`` has more than one, a layer
    picker (``?layer=``) when ``n_layers > 1``; otherwise both are 0.
    """
    stage_key, head_key = f"{key_prefix}stage", f"{key_prefix}head"
    bind_url(stage_key, "stage", stages, "weights")
    bind_url(head_key, "head", range(n_heads), 0)
    bind_url(f"{key_prefix}fixed", "scale", (False, True), False, to_text=lambda v: "fixed" if v else "auto")
    bind_url(f"{key_prefix}all", "all", (False, True), False, to_text=lambda v: "1" if v else "0")
    layer_key, batch_key = f"{key_prefix}layer", f"{key_prefix}batch"
    many = sentences is not None and len(sentences) > 1
    widths = [5.4] + [1.4] * many + [1.0] * (n_layers > 1) + [1.0, 1.7]  # the stage buttons need ~480 px
    left, *pickers, middle, right = st.columns(widths, vertical_alignment="bottom")
    batch = layer = 0
    if many:
        labels = [sentence_label(b, s, 30) for b, s in enumerate(sentences)]
        bind_url(batch_key, "sentence", range(len(sentences)), 0, labels=labels)
        batch = pickers.pop(0).selectbox(_("Sentence"), range(len(sentences)), key=batch_key,
                                         format_func=labels.__getitem__,
                                         help=_("Which sentence of the batch to look at (one per line in the sidebar)."))
    if n_layers > 1:
        bind_url(layer_key, "layer", range(n_layers), 0)
        layer = pickers.pop(0).selectbox(_("Layer"), range(n_layers), key=layer_key)  # bare numbers: narrow column
    stage_names = {s: _(STAGE_LABELS.get(s, s)) for s in stages}  # translated now (format_func may run later)
    stage = left.segmented_control(_("Stage"), stages, key=stage_key, required=True, default=fallback(stage_key),
                                   format_func=stage_names.get, help=_("The step of attention to look at."))
    head = middle.selectbox(_("Head"), range(n_heads), key=head_key,
                            help=_("The head drawn large. Or click a tile in the all-heads figure."))
    with right:
        fixed = st.toggle(_("Fixed 0–1 scale"), key=f"{key_prefix}fixed",
                          help=_("Weights: colours from 0 to 1 (compare figures and slides) instead of 0 to the largest "
                                 "weight shown (see the structure of a nearly uniform head)."))
        all_large = st.toggle(_("All heads large"), key=f"{key_prefix}all")
    return stage, batch, layer, head, fixed, all_large


def _focus_head(key: str, head_key: str) -> None:
    """A click on a tile centre of the all-heads figure (a selection of its transparent marker)."""
    event = st.session_state.get(key) or {}
    head = picked_head((event.get("selection") or {}).get("points"))
    if head is not None:
        st.session_state[head_key] = head  # bind_url writes it into the URL on the rerun


def show(trace: Trace, *, batch: int, layer: int = 0, stage: str, head: int, fixed: bool, all_large: bool,
         key_prefix: str, hide_keys: np.ndarray | None = None, title_prefix: str = "", explain: bool = True) -> None:
    """The focused head beside its formula, shape and the all-heads tiles (two charts), then the
    "explain this number" panel for one cell of the focused head (``explain``)."""
    data = trace.stage(stage, layer)
    zrange = figures.stage_range(trace, stage, batch, layer, fixed=fixed)
    if hide_keys is not None and stage in ("masked_scores", "weights"):
        kept = trace.visible(batch) & ~np.asarray(hide_keys, bool)[None, :]
        zrange = figures.value_range(data[batch][:, figures.informative_cells(kept, stage)], stage, fixed)
    name = _(figures.STAGE_TITLES.get(stage, stage))
    zrange = tuple(zrange) if zrange is not None else None  # part of the figure cache's key
    hidden = None if hide_keys is None else np.asarray(hide_keys, bool).tobytes()
    fmt = st.session_state.get("shared_image_format", "png")
    focus_col, side = st.columns([1.7, 1], gap="medium")
    with side:
        st.caption(_("All {h} heads, same colours. **Click a tile's centre** to focus that head.").format(h=data.shape[1]))
        n_cols = 4 if data.shape[1] > 2 else data.shape[1]
        tiles = cache.per_trace(trace, ("tiles", stage, batch, layer, zrange, hidden, n_cols), lambda: heads_figure(
            trace, stage, batch=batch, layer=layer, zrange=zrange, hide_keys=hide_keys, n_cols=n_cols, tile_px=66))
        tiles_key = f"{key_prefix}tiles_{stage}_{layer}"
        st.plotly_chart(tiles, key=tiles_key, on_select=lambda: _focus_head(tiles_key, f"{key_prefix}head"),
                        selection_mode="points",
                        config=figures.chart_config(figures.figure_filename(stage, None, layer, trace.tokens[batch]),
                                                    fmt))
        st.latex(FORMULAS.get(stage, stage))
        st.markdown(f"`{shape_text(stage, data.shape)}`  \n{_(STAGE_HELP[stage]) if stage in STAGE_HELP else ''}")
        if stage == "masked_scores" and trace.visible(batch).all() and hide_keys is None:
            st.caption(_("No cell of this sentence is masked (causal mask off, no [PAD]): masked scores = raw scores."))
    with focus_col:
        title = title_prefix + _("head {head} · {name}").format(head=head, name=name)
        fig = cache.per_trace(trace, ("focus", stage, batch, head, layer, zrange, hidden, fixed, title),
                              lambda: figures.stage_figure(trace, stage, batch=batch, head=head, layer=layer,
                                                           zrange=zrange, hide_keys=hide_keys, fixed=fixed,
                                                           title=title))
        focus_key = f"{key_prefix}focus"
        st.plotly_chart(fig, key=focus_key, selection_mode="points",
                        on_select=lambda: explain_panel.pick_cell(focus_key, f"{key_prefix}q", f"{key_prefix}k"),
                        config=figures.chart_config(figures.figure_filename(stage, head, layer, trace.tokens[batch]),
                                                    fmt))
    if all_large:
        st.markdown("##### " + _("All heads of {name}, large").format(name=name))
        big = cache.per_trace(trace, ("large", stage, batch, layer, zrange, hidden), lambda: heads_figure(
            trace, stage, batch=batch, layer=layer, zrange=zrange, hide_keys=hide_keys, n_cols=2, tile_px=380))
        st.plotly_chart(big, key=f"{key_prefix}all_large", config=figures.chart_config(
            figures.figure_filename(stage, None, layer, trace.tokens[batch]), fmt))
    if explain and all(name in trace.stages or f"layers.{layer}.attention.{name}" in trace.stages
                       for name in ("q", "k", "v", "scores", "weights", "context")):
        st.divider()
        explain_panel.show(trace, batch=batch, layer=layer, head=head, key_prefix=key_prefix)
