"""Text in: the one text entrance (:func:`~transformer_core.text.tokenize.normalize_text`), the word-level
tokenizer, MiniLM's WordPiece, and padded batches of tokens.

The lowest room: imports nothing else of the package, and neither torch, plotly nor Streamlit.
"""
