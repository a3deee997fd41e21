"""Masks lab: causal and padding masks, the seeds' two fill conventions, float16, a cached prefix,
keys vs queries, attention dropout, and a sliding window with sinks — each computed live on the learner's sentences."""
from ui.shell import nav  # first, before the heavy imports below

nav.enter_through_app()  # a fresh server's first visitor by deep link: straight to app.py's menu

import dataclasses
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from ui.lessons import compute as lesson_compute
from ui.lessons import lesson_figures as L
from ui.lessons import masks_tabs
from ui.parts import toy_compute
from ui.parts.labels import sentence_label
from ui.shell import callbacks, controls, fragments, url
from ui.shell.i18n import _, language

PAGE = "masks_lab"
settings = controls.current()
st.title(_("Masks lab"))
settings = toy_compute.usable(settings)  # WordPiece unavailable: word-level tokens, with a note
L.prose(PAGE, "intro")
if not settings.sentences:
    st.info(_("Type at least one sentence in the sidebar to begin."), icon=":material/edit:")
    st.stop()
pair, added = L.lab_sentences(settings, language())  # the example in the page's language
if added:
    L.prose(PAGE, "one-sentence")
    why = (" " + _("It is English: the WordPiece tokenizer (MiniLM's) reads most Chinese characters as [UNK].")
           if L.english_example(settings.tokenizer, language()) else "")
    st.caption(_("Sentence 1, added: “{example}”.").format(example=pair[1]) + why)
    settings = dataclasses.replace(settings, sentences=pair)  # every computation below runs on this pair
if len(settings.sentences) > 2:
    st.info(_("This page uses the first two sentences; the other {n} are not shown here.").format(
        n=len(settings.sentences) - 2),
            icon=":material/info:")
try:
    trace = lesson_compute.lab_trace(settings)
except ValueError as err:
    st.warning(_("Nothing to show: {error}.").format(error=err), icon=":material/warning:")
    st.stop()

st.dataframe(pd.DataFrame(trace.tokens, index=[_("sentence {b}").format(b=b) for b in range(len(pair))]),
             width="stretch")
if any(trace.truncated):
    st.info(_("Sentences are cut to {n} tokens on this page.").format(n=L.LESSON_TOKENS), icon=":material/content_cut:")
left, right = st.columns(2)
shorter = 0 if added else int(np.argmin(trace.lengths))  # the learner's own sentence first
# index 1 changes meaning when the lab adds or drops its example (the learner's second sentence ↔ the lab's): a kept
# index would then show the lab's sentence in every figure, so the picker starts again on the learner's
if st.session_state.get("_masks_added", added) != added:
    st.session_state["masks_batch"] = shorter
st.session_state["_masks_added"] = added
url.bind_url("masks_batch", "sentence", range(len(pair)), shorter,  # labels: as the picker's below
               labels=[sentence_label(b, " ".join(t[:n])) for b, (t, n) in enumerate(zip(trace.tokens, trace.lengths))])
url.bind_url("masks_head", "head", range(settings.n_heads), 0)
# formatters from ui.shell.callbacks, never a page lambda (it would keep this run alive)
sentence_labels = tuple(sentence_label(b, " ".join(t[:n])) for b, (t, n) in enumerate(zip(trace.tokens, trace.lengths)))
batch = left.selectbox(_("Sentence"), range(len(pair)), key="masks_batch",
                       format_func=partial(callbacks.label_of, sentence_labels))
head = right.selectbox(_("Head"), range(settings.n_heads), key="masks_head",
                       help=_("Which head's scores to mask (the sidebar's n_heads sets how many there are)."))
tokens, length = trace.tokens[batch], trace.lengths[batch]
rows = L.labels(tokens)
# the six sections, one tab at a time: a tab click reruns only them (ui/shell/fragments.py)
fragments.part("masks_lab", masks_tabs.show, settings, batch, head, tokens, length, rows)
