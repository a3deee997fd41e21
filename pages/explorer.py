"""Explorer: every stage of multi-head attention for the learner's sentences (random weights)."""
from ui.shell import nav  # first, before the heavy imports below

nav.enter_through_app()  # a fresh server's first visitor by deep link: straight to app.py's menu

from functools import partial

import streamlit as st

from ui.explorer import traces, variants
from ui.parts import head_view, moves_panels, toy_compute, trace_tables
from ui.shell import controls
from ui.shell.i18n import _
from ui.shell.lazy import lazy_expander

settings = controls.current()
st.title(_("Attention Explorer"))
settings = toy_compute.usable(settings)  # WordPiece unavailable: word-level tokens, with a note
st.markdown(_(
    "Each token's new vector is a **weighted mix of all tokens**: a row is a query, a column a key, a row's "
    "weights add up to 1. **Try first:** turn on the **Causal mask** (sidebar), then change **n_heads**. "
    "Then see [trained heads](/minilm), [masks](/masks_lab) and [the whole block](/pipeline)."))

if not settings.sentences:
    st.info(_("Type at least one sentence in the sidebar to begin."), icon=":material/edit:")
    st.stop()
STAGES = ("scores", "masked_scores", "weights", "context")
main, extras = st.container(), st.container()  # figures first; today's attention, tables, downloads, uploads below
with extras:
    st.divider()
    # lazy (``.open``): its token table, a data grid, is built and sent only once opened (a first visit does not load
    # the grid's code for a box nobody opened); ``?tables=1`` keeps it open on a rerun and in a copied link
    box = lazy_expander(_("Tokens, downloads and reopening a saved trace"), key="explorer_tables", url="tables",
                        icon=":material/table:", note_to=main)  # a refused ?tables= is said above the figures
tables = box.container()
with box:  # the uploader is drawn closed too: a file uploaded stays shown when the box is closed again
    trace = traces.reopened_trace(key="explorer_upload", stages=STAGES, expander=False)
uploaded = trace is not None
if uploaded:  # said above the figures too: the sidebar's sentences and masks no longer apply
    main.info(_("Showing an uploaded trace: its own sentences, masks and sizes, not the sidebar's. Remove the file "
                "under “Tokens, downloads and reopening a saved trace” to go back."), icon=":material/upload_file:")
else:
    variant = variants.values(settings)  # shared key/value heads, sliding window with sinks; drawn beside the figure
    try:  # every stage, plus ‖α·f(x)‖ from the toy's seeded W_O
        trace = traces.toy_with_norms(settings, None if variant.n_kv_heads == settings.n_heads else variant.n_kv_heads,
                                      variant.window, variant.sinks)
    except ValueError as err:
        main.warning(_("Nothing to show: {error}.").format(error=err), icon=":material/warning:")
        st.stop()
    for note in traces.cut_notes(trace, settings):  # above the figures, not only in the tokens box below them
        main.info(note, icon=":material/content_cut:")

with main:
    sentences = [" ".join(t[:n]) for t, n in zip(trace.tokens, trace.lengths)]
    shown = tuple(s for s in head_view.STAGES if trace.has(s))  # a reopened file may hold only the four it needs
    stage, batch, _layer, head, fixed, all_large = head_view.controls(trace.n_heads, "explorer_", sentences=sentences,
                                                                      stages=shown + traces.norm_stages(trace))
    if trace.lengths[batch] == 0:
        st.warning(_("This sentence has no tokens: every position is padding."), icon=":material/warning:")
    head_view.show(trace, batch=batch, stage=stage, head=head, fixed=fixed, all_large=all_large,
                   key_prefix="explorer_", explain=stage != "norms",
                   side=None if uploaded else partial(variants.controls, settings))
    if stage == "norms":
        moves_panels.norms_panel(trace, batch=batch, layer=0, head=head, key_prefix="explorer_")  # factors, then explain
if box.open:
    with tables:
        trace_tables.token_table(trace)
        trace_tables.stage_csv(trace, stage, batch=batch, key_prefix="explorer_")
        trace_tables.trace_downloads(trace, batch=batch, stages=STAGES, key_prefix="explorer_")
