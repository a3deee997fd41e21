"""Attention Explorer — entrypoint: `streamlit run app.py`.

Draws the shared sidebar (so its state persists across pages), then runs the chosen page.
"""
import streamlit as st

from ui import nav, state

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")
nav.leave_legacy_mode(rerun=True)
page = st.navigation(nav.pages())
st.session_state["_settings"] = state.sidebar()
page.run()
