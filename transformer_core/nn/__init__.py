"""The attention math: masks, scaled dot-product and multi-head attention, the feed-forward network,
hook points and :func:`~transformer_core.nn.hooks.capture`, embeddings, the post-LN encoder, its config.

Imports torch and :mod:`transformer_core.text` (the ``[PAD]`` token) only: never plotly, pandas or Streamlit.
Mask convention: ``True`` = may attend. Shape legend: batch, head, query_pos, key_pos, d_head, d_model, d_ff.
Sources: "Attention Is All You Need" (Vaswani et al. 2017) and the two tutorial seeds.
"""
