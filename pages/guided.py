"""Guided lessons: short steps that ask the learner to predict before they show, each on a live figure of the
learner's own sentence (or of the trained models), each step a link (?lesson=2&step=3)."""
from ui.shell import nav  # first, before the heavy imports below

nav.enter_through_app()  # a fresh server's first visitor by deep link: straight to app.py's menu

from functools import partial

import streamlit as st

from transformer_core.models.causal import CausalUnavailable
from transformer_core.models.gguf_weights import SmolLM2Unavailable
from ui.causal import compute as causal
from ui.guided import ask, catalog, route
from ui.guided.sources import Sources
from ui.llm import compute as llm
from ui.llm.catalog import DEFAULT as SMOLLM2
from ui.parts import toy_compute
from ui.shell import controls
from ui.shell.i18n import _
from ui.shell.markdown import plain

settings = toy_compute.usable(controls.current())  # WordPiece unavailable: word-level tokens, with a note
st.title(_("Guided lessons"))
picker, bar = st.columns([1, 1], vertical_alignment="center")  # one row: the figure and question need the height
lesson, step = route.where(catalog.TITLES, catalog.COUNTS, picker)
route.progress(lesson, step, catalog.COUNTS, bar)
if not settings.sentences and lesson <= 3:  # lessons 4 and 5 read their own models' inputs
    st.info(_("Type at least one sentence in the sidebar to begin."), icon=":material/edit:")
    st.stop()
# the pages' own caches: a lesson adds no model run of its own
# (lesson 5 is written for SmolLM2's heads, whichever models the server's /llm page offers)
sources = Sources(toy=toy_compute.toy_trace, causal=causal.causal_trace, sequence=causal.generate,
                  llm_summary=partial(llm.summary, SMOLLM2), llm_layer=partial(llm.layer_trace, SMOLLM2),
                  llm_attribution=partial(llm.attribution, SMOLLM2))
try:
    view = catalog.LESSONS[lesson - 1][1][step - 1](settings, sources)
except ValueError as err:
    st.warning(_("Nothing to show: {error}.").format(error=plain(str(err))), icon=":material/warning:")
    st.stop()
except (SmolLM2Unavailable, CausalUnavailable) as err:  # a model that is missing: the other lessons keep working
    st.error(_("This lesson's model is not available, so it cannot run: {error}").format(error=plain(str(err))),
             icon=":material/block:")
    st.stop()
ask.show(view, lesson, step)
route.buttons(lesson, step, catalog.COUNTS)
