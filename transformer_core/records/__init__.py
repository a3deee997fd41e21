"""Records of a forward pass and their files: the :class:`~transformer_core.records.trace.Trace`, its
JSON/CSV/HTML files (``serialize``), the upload schema check (``schema``) and SHA-256 checks (``checksums``).

May import :mod:`~transformer_core.text` and :mod:`~transformer_core.nn`; NumPy, never plotly or Streamlit.
"""
