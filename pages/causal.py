"""Trained causal model: a tiny GPT-style decoder trained here on repeated random tokens — watch its
previous-token and induction heads form over training, under the causal mask it learned with."""
from ui.shell import nav  # first, before the heavy imports below

nav.enter_through_app()  # a fresh server's first visitor by deep link: straight to app.py's menu

import streamlit as st

from transformer_core.models.causal import CAUSAL_CONFIG, parse_tokens
from ui.causal import compute as causal
from ui.causal import view
from ui.shell import fragments, url
from ui.shell.i18n import _
from ui.shell.markdown import plain

N_LAYERS, N_HEADS = CAUSAL_CONFIG.n_layers, CAUSAL_CONFIG.n_heads
ss = st.session_state
st.title(_("Trained causal model"))
st.caption(_("A {layers}-layer, {heads}-head, attention-only decoder (d_model = {d_model}, vocabulary = token ids "
             "0–{last}, at most {positions} positions) trained on this machine by `python -m "
             "transformer_core.models.train_causal` with the **causal mask** on, on random tokens whose second half "
             "repeats the first. The first half cannot be predicted; the repeat can — by an **induction head** (Olsson "
             "et al. 2022; Elhage et al. 2021). The sidebar does not apply here.").format(
    layers=N_LAYERS, heads=N_HEADS, d_model=CAUSAL_CONFIG.d_model, last=CAUSAL_CONFIG.vocab_size - 1,
    positions=CAUSAL_CONFIG.max_positions))

try:
    causal.log()
except OSError as err:
    st.error(_("The causal model's training log is missing, so this page cannot run: {error}").format(error=plain(str(err))),
             icon=":material/block:")
    st.stop()
causal.count_forwards()  # diagnostics only (AE_DIAGNOSTICS=1): the model's forward calls, for the tests

# ------------------------------------------------------------------ controls
url.bind_url("causal_period", "period", range(2, CAUSAL_CONFIG.max_positions // 2 + 1), 16)
url.bind_url("causal_seed", "seq_seed", range(100), 0)
if "causal_text" not in ss:
    raw = st.query_params.get("seq")
    ss["causal_text"] = raw[:400] if raw else " ".join(map(str, causal.generate(url.value("causal_period"),
                                                                                url.value("causal_seed"))))
c1, c2, c3 = st.columns([1, 1, 1.2], vertical_alignment="bottom")
c1.number_input(_("Period (random tokens, then repeated)"), min_value=2, max_value=CAUSAL_CONFIG.max_positions // 2,
                key="causal_period", on_change=causal.regenerate,
                help=_("How many random tokens before the sequence repeats itself; the sequence is that many twice."))
c2.number_input(_("Random seed"), min_value=0, max_value=99, key="causal_seed", on_change=causal.regenerate)
c3.button(_("New random sequence"), on_click=causal.next_seed, icon=":material/casino:")
text = st.text_input(_("Sequence (token ids 0–63, separated by spaces; edit freely)"), key="causal_text")
try:
    ids = parse_tokens(text)
except ValueError as err:
    st.warning(_("Nothing to show: {error}.").format(error=plain(str(err))), icon=":material/warning:")
    st.stop()
if not ids:
    st.info(_("Type some token ids or press **New random sequence**."), icon=":material/edit:")
    st.stop()
if len(ids) > CAUSAL_CONFIG.max_positions:
    st.info(_("The model has {n} positions: the sequence is cut to its first {n} tokens.").format(
        n=CAUSAL_CONFIG.max_positions), icon=":material/content_cut:")
    ids = ids[:CAUSAL_CONFIG.max_positions]
if st.query_params.get("seq") != " ".join(map(str, ids)):
    st.query_params["seq"] = " ".join(map(str, ids))
period = causal.detect_period(ids)

# the checkpoint, the mask and everything they change: one part of the page (a click there reruns only it)
fragments.part("causal_view", view.show, tuple(ids), period, N_LAYERS, N_HEADS)
