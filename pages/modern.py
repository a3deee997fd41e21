"""Attention since 2017: positions (sinusoidal, learned, RoPE, ALiBi), shared key/value heads, the KV cache, sliding
windows and sinks, and FlashAttention's online softmax — each shown equal to the plain computation."""
from ui.shell import nav  # first, before the heavy imports below

nav.enter_through_app()  # a fresh server's first visitor by deep link: straight to app.py's menu

import streamlit as st

from ui.modern import kv, long_online, positions
from ui.shell import controls
from ui.shell.i18n import N_, _, language
from ui.shell.language_widgets import tabs as translated_tabs

settings = controls.current()
st.title(_("Attention since 2017"))
# one section at a time (lazy: only the open tab runs), its English name in the URL as ?section=…
tabs = translated_tabs([N_("Positions"), N_("Shared KV heads"), N_("KV cache"), N_("Long inputs"),
                        N_("Online softmax")], key="modern_section", url="section")
with tabs[0]:
    if tabs[0].open:
        positions.draw(settings)
with tabs[1]:
    if tabs[1].open:
        kv.draw_shared()
with tabs[2]:
    if tabs[2].open:
        note = st.container()  # above the model and step pickers
        kv.draw_cache()
        if language() != "en" and kv.PROMPT_LANGUAGE.get(st.session_state.get("modern_model")) == "en":
            note.caption(_("The prompt stays English: SmolLM2 learned mostly English. After a Chinese prompt such as "
                           "“中国的首都是北京。德国的首都是” (14 characters, 26 tokens) 20 of the 32 tokens it generates "
                           "are pieces of characters, so the cache's rows would be hard to read. A KV cache works the "
                           "same in any language."))
with tabs[3]:
    if tabs[3].open:
        long_online.draw_long()
with tabs[4]:
    if tabs[4].open:
        long_online.draw_online()
