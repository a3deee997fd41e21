"""What we compute from a trace to explain it: one cell's arithmetic (``explain``), per-head statistics
(``head_stats``) and the lesson computations (``lessons``). New analyses go here, one module each.

May import ``text``, ``nn``, ``records`` and ``models``; NumPy and pandas, never plotly or Streamlit.
"""
