"""Multi-head pipeline: one sentence followed step by step through multi-head attention and the
feed-forward network of the toy encoder's first layer, then two settings side by side."""
from ui.shell import nav  # first, before the heavy imports below

nav.enter_through_app()  # a fresh server's first visitor by deep link: straight to app.py's menu

import pandas as pd
import streamlit as st

from ui.lessons import compute as lesson_compute
from ui.lessons import lesson_figures as L
from ui.lessons import pipeline_steps
from ui.parts import toy_compute, trace_tables
from ui.shell import controls, fragments
from ui.shell.i18n import _
from ui.shell.lazy import lazy_expander

PAGE = "pipeline"
settings = controls.current()
st.title(_("Multi-head pipeline"))
settings = toy_compute.usable(settings)  # WordPiece unavailable: word-level tokens, with a note
L.prose(PAGE, "intro")
if not settings.sentences:
    st.info(_("Type at least one sentence in the sidebar to begin."), icon=":material/edit:")
    st.stop()
batch = 0
# the picker beside the sizes line, and the parameter count after the steps: the step tabs stay in view at 1280×720
pick, sizes = st.columns([1, 1.25], vertical_alignment="bottom") if len(settings.sentences) > 1 else (None, st)
if pick is not None:
    with pick:
        batch = trace_tables.sentence_picker(_("Sentence to follow"), list(settings.sentences), key="pipeline_batch")
h, d_model = settings.n_heads, settings.d_model
data = lesson_compute.walkthrough(settings, batch, h, settings.causal)
tokens, d_k = data["tokens"], d_model // h
if data["truncated"]:
    st.info(_("The sentence is cut to {n} tokens on this page.").format(n=L.LESSON_TOKENS),
            icon=":material/content_cut:")
sizes.markdown(_("**{n} tokens** · d_model = **{d_model}** · n_heads = **{h}** → d_k = {d_model} / {h} = **{d_k}** · "
                 "causal mask **{state}** (sidebar)").format(n=len(tokens), d_model=d_model, h=h, d_k=d_k,
                                                             state=_("on") if settings.causal else _("off")))

# the six steps, one tab at a time: a tab click reruns only them (ui/shell/fragments.py)
fragments.part("pipeline", pipeline_steps.show, settings, batch)

counts = lesson_compute.parameter_counts(d_model, tuple(controls.head_choices(d_model)))
st.info(_("MultiHeadAttention(d_model={d_model}, n_heads={h}) has **{n} parameters** (counted on the module).")
        .format(d_model=d_model, h=h, n=f"{counts[h]:,}"), icon=":material/calculate:")
# lazy (ui/shell/lazy.py): its data grid is built, sent and mounted only once opened (``?params=1``)
params_box = lazy_expander(_("Parameters for every head count (the same: heads only split d_model)"),
                           key="pipeline_params_box", url="params")
if params_box.open:
    with params_box:
        L.prose(PAGE, "params")
        st.dataframe(pd.DataFrame({"n_heads": list(counts), "d_k": [d_model // c for c in counts],
                                   _("parameters"): [f"{v:,}" for v in counts.values()]}), hide_index=True,
                     key="pipeline_params_table")
