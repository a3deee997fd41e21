"""What every page uses: controls and URL state, languages, navigation, failover notice, caches, fragments, callbacks, diagnostics. Imports only transformer_core and Streamlit."""
