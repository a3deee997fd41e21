"""The head view shared by the explorer and the MiniLM page: one stage, one head in focus, every head at a glance.

Two Plotly charts, whatever the number of heads (the browser pays per chart, not per cell):
the focused head large (:func:`transformer_core.figures.stage.stage_figure`) and all heads of the
stage tiled in one figure (:func:`transformer_core.figures.heads.heads_figure`; click a tile to
focus it). Stage, head, colour scale and "all heads large" live in the URL (``stage``,
``head``, ``scale``, ``all``), so a copied link reopens the same view.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from transformer_core.analysis.shared_kv import trace_kv_heads
from transformer_core.figures import stage as figures
from transformer_core.figures.heads import heads_figure, picked_head
from transformer_core.figures.slide import describe
from transformer_core.records.trace import PATTERN_STAGES, Trace

from ..shell.chart import SUFFIX as CHART_SUFFIX, chart, spec
from ..shell import cache
from ..shell.i18n import N_, _
from ..shell.url import batch as url_batch, bind_url, fallback, value
from . import explain_panel
from .labels import sentence_label
from .trace_tables import FORMULAS, STAGE_HELP, shape_text

STAGES = ("q", "k", "v", "scores", "masked_scores", "weights", "context")
STAGE_LABELS = {"q": "Q", "k": "K", "v": "V", "scores": N_("scores"), "masked_scores": N_("masked"),
                "weights": N_("weights"), "context": N_("context"), "norms": N_("norms")}

FIT_PX = 422  # a focused head beside the tiles: from ~296 px (under the explorer's pickers) to a 720-px screen's edge
SCALES = {"auto": N_("0 – max"), "fixed": N_("0 – 1"), "row": N_("each row")}  # ?scale=: the weights' colour range


def controls(n_heads: int, key_prefix: str, stages: tuple[str, ...] = STAGES, n_layers: int = 1,
             sentences: list[str] | None = None) -> tuple[str, int, int, int, str, bool]:
    """``(stage, batch, layer, head, scale, all_large)`` from one compact row of controls bound to the URL.

    ``scale`` is one of :data:`SCALES` (``?scale=``); its picker and "all heads large" are drawn by :func:`show`.

    A sentence picker (``?sentence=``) is shown when ``sentences`` has more than one, a layer
    picker (``?layer=``) when ``n_layers > 1``; otherwise both are 0.
    """
    with url_batch():  # the URL's stage, head, scale, all, sentence and layer: one message
        return _controls(n_heads, key_prefix, stages, n_layers, sentences)


def _controls(n_heads: int, key_prefix: str, stages: tuple[str, ...], n_layers: int,
              sentences: list[str] | None) -> tuple[str, int, int, int, str, bool]:
    stage_key, head_key = f"{key_prefix}stage", f"{key_prefix}head"
    bind_url(stage_key, "stage", stages, "weights")
    bind_url(head_key, "head", range(n_heads), 0)
    bind_url(f"{key_prefix}scale", "scale", tuple(SCALES), "auto")
    bind_url(f"{key_prefix}all", "all", (False, True), False, to_text=lambda v: "1" if v else "0")
    layer_key, batch_key = f"{key_prefix}layer", f"{key_prefix}batch"
    many = sentences is not None and len(sentences) > 1
    # the eight stage buttons need ~500 px of the ~790 at 1280 px (a sentence label gets ~200); colours and "all heads large" sit by the tiles
    widths = [5.8] + [2.3] * many + [1.0] * (n_layers > 1) + [1.0]
    # keyed: a tile click scrolls this row to the top when the opened head still fits under it (_SCROLL)
    left, *pickers, middle = st.container(key=f"{key_prefix}pickers").columns(widths, vertical_alignment="bottom")
    batch = layer = 0
    if many:
        labels = [sentence_label(b, s, 30) for b, s in enumerate(sentences)]
        bind_url(batch_key, "sentence", range(len(sentences)), 0, labels=labels)
        batch = pickers.pop(0).selectbox(_("Sentence"), range(len(sentences)), key=batch_key,
                                         index=fallback(batch_key) or 0,
                                         format_func=labels.__getitem__,
                                         help=_("Which sentence of the batch to look at (one per line in the sidebar)."))
    if n_layers > 1:
        bind_url(layer_key, "layer", range(n_layers), 0)
        layer = pickers.pop(0).selectbox(_("Layer"), range(n_layers), key=layer_key,  # bare numbers: narrow column
                                         index=fallback(layer_key) or 0)
    stage_names = {s: _(STAGE_LABELS.get(s, s)) for s in stages}  # translated now (format_func may run later)
    stage = left.segmented_control(_("Stage"), stages, key=stage_key, required=True, default=fallback(stage_key),
                                   format_func=stage_names.get, help=_("The step of attention to look at."))
    # index: the URL's head on a moved session's first run if the browser did not resend it (ui.shell.url.fallback)
    head = middle.selectbox(_("Head"), range(n_heads), key=head_key, index=fallback(head_key) or 0,
                            help=_("The head drawn large. Or click a tile in the all-heads figure."))
    scale, all_large = st.session_state.get(f"{key_prefix}scale"), st.session_state.get(f"{key_prefix}all")
    return stage, batch, layer, head, scale or "auto", bool(all_large)  # their widgets: show(), by the tiles


def _focus_head(key: str, head_key: str) -> None:
    """A click on a tile centre of the all-heads figure (a selection of its transparent marker)."""
    event = st.session_state.get(key) or {}
    head = picked_head((event.get("selection") or {}).get("points"))
    if head is not None:
        st.session_state[head_key] = head  # bind_url writes it into the URL on the rerun


def _explainable(trace: Trace, layer: int) -> bool:
    return all(name in trace.stages or f"layers.{layer}.attention.{name}" in trace.stages
               for name in ("q", "k", "v", "scores", "weights", "context"))


def chosen_cell(trace: Trace, batch: int, key_prefix: str) -> tuple[int, int]:
    """``(query, key)`` of the explained cell (``?q=&k=``, a click or the pickers), bound before the figure is drawn."""
    tokens = trace.tokens[batch]
    options = [f"{i}: {t}" for i, t in enumerate(tokens)]
    with url_batch():
        for name in ("q", "k"):
            bind_url(f"{key_prefix}{name}", name, range(len(tokens)), 0, labels=options)
    # value(): a moved session's first run may not have these keys yet (ui/shell/url.fallback)
    return int(value(f"{key_prefix}q") or 0), int(value(f"{key_prefix}k") or 0)


# A long sentence's heatmap is taller than the screen: its answer line sticks under Streamlit's header (60 px) while
# the student scrolls to a low row, so a click anywhere shows its answer without moving the clicked cell.
# (Streamlit wraps the keyed container in a layout wrapper of its own height: that wrapper is what sticks.)
_STICKY = """<style>[data-testid="stLayoutWrapper"]:has(> .st-key-{prefix}answer) {{position: sticky; top: 60px;
  z-index: 3; background: #fff; padding: 4px 0; border-bottom: 1px solid rgba(49, 51, 63, 0.2);}}</style>"""


def _layout(wide: bool, key_prefix: str, with_side: bool = False) -> dict:
    """Where each part goes. Short sentences: the focused head beside a column with the colour choice, the
    chosen cell's answer (in view after a click at 1280×720), the tiles and the formula. Long ones: the
    choice and the answer above a focused head as wide as the page, tiles and formula below it."""
    if wide:
        options = st.container(horizontal=True, vertical_alignment="bottom", gap="large")  # one row over the band
        band = st.container()  # the answer stays at the top of the screen over the tall heatmap (_STICKY)
        answer, focus = band.container(key=f"{key_prefix}answer"), band.container()
        st.html(_STICKY.format(prefix=key_prefix))
        tiles, formula = st.columns([1, 1], gap="medium")
        return dict(options=options, answer=answer, focus=focus, tiles=tiles, formula=formula, side=formula)
    focus, column = st.columns([1.5, 1], gap="medium")
    with column:  # the answer first (in view after a click), the page's own controls (closed: one line), the tiles,
        # then the options and the formula
        answer = st.container()
        side = st.container() if with_side else None  # no empty block (its gap) on pages without such controls
        tiles, options = st.container(), st.container()
    return dict(options=options, answer=answer, tiles=tiles, formula=options, focus=focus, side=side)


def _view_options(key_prefix: str, wide: bool) -> None:
    """The colour range of the weights (``?scale=``) and "all heads large" (``?all=``), bound in :func:`controls`."""
    scale_key = f"{key_prefix}scale"
    names = {k: _(v) for k, v in SCALES.items()}
    st.segmented_control(
        _("Colours"), list(SCALES), key=scale_key, required=True, default=fallback(scale_key), format_func=names.get,
        help=_("Weights: from 0 to the largest weight shown (see a nearly uniform head's structure), fixed from 0 "
               "to 1 (compare figures and slides), or each query row from 0 to its own largest weight (where each "
               "query looks, however many keys it sees). Other stages: one range for every head."))
    st.toggle(_("All heads large"), key=f"{key_prefix}all", help=_("Every head of this stage below, large, "
                                                                         "with token labels and a colour bar."))


# Scrolls the answer line (the element before this one) into view, once per click: a cell low in a tall heatmap is
# clicked with the page scrolled down, and the answer above the heatmap was then off screen. Streamlit's
# header (opaque, 60 px at the top) counts as off screen: a first line under it was unreadable (MiniLM in 中文). A cell
# click scrolls as little as it can ("nearest": the clicked cell beside the answer stays close to where it was); after
# a tile click ("always"), the answer goes to the top: the opened head's heatmap starts beside or right under it.
_SCROLL = """<span id="{id}"></span><script>
(() => {{ const mark = document.getElementById("{id}");
  const box = mark && mark.closest('[data-testid="stElementContainer"]');
  const answer = box && box.previousElementSibling;
  if (!answer) return;
  const header = document.querySelector('[data-testid="stHeader"]');
  const top = header ? Math.max(0, header.getBoundingClientRect().bottom) : 0;
  const r = answer.getBoundingClientRect();
  let target = answer;
  if ({always}) {{  // the Stage / Layer / Head row above it too, when the opened heatmap still ends on screen
    const row = document.querySelector(".st-key-{prefix}pickers"), focus = document.querySelector(".st-key-{prefix}focus, .st-key-{prefix}focus{suffix}");
    const shift = row && row.getBoundingClientRect().top - (top + 8);
    const bottom = Math.max(r.bottom, focus ? focus.getBoundingClientRect().bottom : 0);
    if (row && shift <= r.top - (top + 8) && bottom - shift <= window.innerHeight) target = row;
  }}
  if ({always} || r.top < top || r.bottom > window.innerHeight) {{
    target.style.scrollMarginTop = (top + 8) + "px";
    target.scrollIntoView({{block: "{block}", behavior: "instant"}});
  }}
}})();
</script>"""


def opened_by_tile(key_prefix: str) -> None:
    """Called by an overview's tile click that opens a head: the next run brings that head's answer and heatmap into
    view, also when the head was open already (the click changed nothing else on screen)."""
    st.session_state[f"_{key_prefix}tile_opened"] = True


def _answer_into_view(key_prefix: str, chosen: tuple, tile: bool) -> None:
    """After a click that changed the explained cell, bring its answer line into view (not on a page's first run);
    after an overview tile click (:func:`opened_by_tile`), to the top of the screen, the opened heatmap with it."""
    ss = st.session_state
    seen = f"_{key_prefix}answer_seen"
    before, ss[seen] = ss.get(seen), chosen
    # not on a new sentence: its picker sits above the figures, and a scroll as it closes left it unable to reopen
    if tile or (before is not None and before != chosen and before[0] == chosen[0]):
        count = ss[f"_{key_prefix}scrolls"] = ss.get(f"_{key_prefix}scrolls", 0) + 1  # a new element: it runs again
        ident = f"ae-answer-{key_prefix}{'-'.join(map(str, chosen))}-{count}"
        st.html(_SCROLL.format(id=ident, always="true" if tile else "false", block="start" if tile else "nearest",
                               prefix=key_prefix, suffix=CHART_SUFFIX),
                unsafe_allow_javascript=True)


def show(trace: Trace, *, batch: int, layer: int = 0, stage: str, head: int, fixed: bool | str, all_large: bool,
         key_prefix: str, hide_keys: np.ndarray | None = None, title_prefix: str = "", explain: bool = True,
         side: Callable[[], None] | None = None) -> None:
    """The focused head beside its formula, shape and the all-heads tiles (two charts), then the
    "explain this number" panel for one cell of the focused head (``explain``). ``side`` draws a page's own
    controls of what the figure shows in its side column, under the answer (beside the tiles when the figure spans
    the column)."""
    scale = fixed if isinstance(fixed, str) else ("fixed" if fixed else "auto")  # controls() gives a SCALES key
    fixed = scale == "fixed"
    data = trace.stage(stage, layer)
    zrange = figures.stage_range(trace, stage, batch, layer, fixed=fixed)
    if hide_keys is not None and stage in ("masked_scores", "weights"):
        kept = trace.visible(batch) & ~np.asarray(hide_keys, bool)[None, :]
        zrange = figures.value_range(data[batch][:, figures.informative_cells(kept, stage)], stage, fixed)
    name = _(figures.STAGE_TITLES.get(stage, stage))
    zrange = tuple(zrange) if zrange is not None else None  # part of the figure cache's key
    hidden = None if hide_keys is None else np.asarray(hide_keys, bool).tobytes()
    fmt = st.session_state.get("shared_image_format", "png")
    n = len(trace.tokens[batch])
    wide = n > figures.WIDE_TOKENS and stage in PATTERN_STAGES  # long sentences: the focused head fills the column
    cell = chosen_cell(trace, batch, key_prefix) if explain and _explainable(trace, layer) else None
    where = _layout(wide, key_prefix, side is not None)
    opened = st.session_state.pop(f"_{key_prefix}tile_opened", False)  # this run's only: read, even with no answer
    st.html(figures.SCREEN_ONLY_CSS)  # the selection frames on screen; saved images stay clean
    # the focused head first, so a first visit shows it soonest: its chart and caption are sent before the options,
    # the answer, the tiles and the formula (each goes to its own place of the layout above, whatever the order they
    # are sent in)
    with where["focus"]:
        kv = trace_kv_heads(trace.settings, data.shape[1])  # shared key/value heads: named, as on the tiles
        title = title_prefix + (_("head {head} · KV {kv} · {name}").format(head=head, kv=kv[head], name=name) if kv
                                else _("head {head} · {name}").format(head=head, name=name))
        # beside the tiles, the whole figure (title, labels, plot, caption) is FIT_PX tall when its rows keep their
        # labels: from under the explorer's pickers it ends above a 720-px screen's edge (at 430 px plus its title and
        # caption, a 4-token sentence's last row was cut in half there and the default's caption was below the fold)
        size = dict(height=figures.wide_height(n), width_px=700) if wide else dict(fit=FIT_PX)
        square = stage in PATTERN_STAGES
        fig = cache.per_trace(trace, ("focus", stage, batch, head, layer, zrange, hidden, scale, title, cell, wide),
                              lambda: figures.stage_figure(trace, stage, batch=batch, head=head, layer=layer,
                                                           zrange=zrange, hide_keys=hide_keys, fixed=fixed,
                                                           title=title, row_scale=scale == "row", cell=cell,
                                                           square=square, source=[describe(trace, batch, 48)], **size))
        focus_key = f"{key_prefix}focus"
        shown = cache.per_trace(trace, ("focus JSON", stage, batch, head, layer, zrange, hidden, scale, title, cell, wide),
                                lambda: spec(fig))
        chart(shown, key=focus_key, selection_mode="points",
              on_select=lambda: explain_panel.pick_cell(focus_key, f"{key_prefix}q", f"{key_prefix}k"),
              config=figures.chart_config(figures.figure_filename(stage, head, layer, trace.tokens[batch]),
                                          fmt))
        if wide and (every := figures.labelled_every(fig)) > 1:
            st.caption(_("{n} tokens: one position in {k} is labelled (hover names each cell). Drag over the figure to zoom "
                         "in; double-click to zoom out.").format(n=n, k=every))
    with where["options"]:
        _view_options(key_prefix, wide)
    if side is not None:
        with where["side"]:
            side()
    if cell is not None:
        with where["answer"]:
            explain_panel.first_line(trace, batch=batch, layer=layer, head=head, query=cell[0], key=cell[1],
                                     outlined=stage in PATTERN_STAGES,  # stage_figure frames only these
                                     below=key_prefix)  # the panel's steps, drawn at the bottom (cell: explain on)
            _answer_into_view(key_prefix, (batch, layer, head, *cell), opened)
    with where["tiles"]:
        by_row = scale == "row" and stage == "weights"  # only the large head is coloured row by row
        st.caption((_("All {h} heads, one colour range for all (not row by row). **Click a tile's centre** to focus "
                      "that head.") if by_row else
                    _("All {h} heads, same colours. **Click a tile's centre** to focus that head.")).format(h=data.shape[1]))
        n_cols = 4 if data.shape[1] > 2 else data.shape[1]
        # the focused head's tile is framed: the figure is resent when the head changes (one small chart)
        # kept as chart JSON (ui/shell/chart.Spec): a rerun showing the same tiles neither builds nor serialises them;
        # 56-px tiles: 8 heads' two rows end above a 720-px screen's edge beside the explorer's head (66 ended at 736)
        tiles = cache.per_trace(trace, ("tiles", stage, batch, layer, zrange, hidden, n_cols, head), lambda: spec(heads_figure(
            trace, stage, batch=batch, layer=layer, zrange=zrange, hide_keys=hide_keys, n_cols=n_cols, tile_px=56,
            focus=head)))
        tiles_key = f"{key_prefix}tiles_{stage}_{layer}"
        chart(tiles, key=tiles_key, on_select=lambda: _focus_head(tiles_key, f"{key_prefix}head"),
              selection_mode="points",
              config=figures.chart_config(figures.figure_filename(stage, None, layer, trace.tokens[batch]),
                                          fmt))
    with where["formula"]:
        st.latex(FORMULAS.get(stage, stage))
        st.markdown(f"`{shape_text(stage, data.shape)}`  \n{_(STAGE_HELP[stage]) if stage in STAGE_HELP else ''}")
        if stage == "masked_scores" and trace.visible(batch).all() and hide_keys is None:
            st.caption(_("No cell of this sentence is masked (causal mask off, no [PAD]): masked scores = raw scores."))
    if all_large:
        st.markdown("##### " + _("All heads of {name}, large").format(name=name))
        big = cache.per_trace(trace, ("large", stage, batch, layer, zrange, hidden), lambda: spec(heads_figure(
            trace, stage, batch=batch, layer=layer, zrange=zrange, hide_keys=hide_keys, n_cols=2, tile_px=380,
            labels=True)))
        chart(big, key=f"{key_prefix}all_large", config=figures.chart_config(
            figures.figure_filename(stage, None, layer, trace.tokens[batch]), fmt))
    if explain and all(name in trace.stages or f"layers.{layer}.attention.{name}" in trace.stages
                       for name in ("q", "k", "v", "scores", "weights", "context")):
        st.divider()
        explain_panel.show(trace, batch=batch, layer=layer, head=head, key_prefix=key_prefix,
                           clickable=stage in PATTERN_STAGES)
