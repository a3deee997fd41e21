"""The Streamlit app's rooms; imports run one way: pages → page rooms (explorer, minilm, causal, lessons) → parts → shell → transformer_core."""
