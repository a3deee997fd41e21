"""Explorer: every stage of multi-head attention for the learner's sentences (random weights)."""
import streamlit as st

from ui import compute, state, views

STAGES = ("scores", "masked_scores", "weights", "context")

settings = state.current()
st.title("Attention Explorer")
st.caption("Type sentences in the sidebar; every stage below is recomputed at once. "
           "Random weights (seeded): this shows the mechanics, not learned meaning.")

if not settings.sentences:
    st.info("Type at least one sentence in the sidebar to begin.", icon=":material/edit:")
    st.stop()
trace = views.reopened_trace(key="explorer_upload", stages=STAGES)
if trace is None:
    try:
        trace = compute.toy_trace(settings)
    except ValueError as err:
        st.warning(f"Nothing to show: {err}.", icon=":material/warning:")
        st.stop()

views.token_table(trace)
batch = 0
if len(trace.tokens) > 1:
    batch = views.sentence_radio("Sentence to inspect", [" ".join(t[:n]) for t, n in zip(trace.tokens, trace.lengths)],
                                 key="explorer_batch")
if trace.lengths[batch] == 0:
    st.warning("This sentence has no tokens: every position is padding.", icon=":material/warning:")

views.trace_downloads(trace, batch=batch, stages=STAGES, key_prefix="explorer_")
for stage, title in zip(STAGES, ("1 · Raw scores", "2 · Masked scores", "3 · Attention weights", "4 · Per-head context")):
    st.subheader(title)
    views.stage_block(trace, stage, batch=batch, key_prefix="explorer_")

if st.toggle("Show Q, K and V (after W_Q, W_K, W_V, split into heads)", key="explorer_show_qkv"):
    for stage in ("q", "k", "v"):
        st.subheader(stage.upper())
        views.stage_block(trace, stage, batch=batch, key_prefix="explorer_qkv_")
