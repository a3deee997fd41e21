"""The models we run, each returning a :class:`~transformer_core.records.trace.Trace`: the random-weight toy
encoder (``toy``), MiniLM-L6 on our modules (``minilm``, ``minilm_trace``), and the causal model trained in this
repo (``causal``, with its trainer ``train_causal`` and its checkpoints in ``data/``).

May import ``text``, ``nn`` and ``records``; never plotly or Streamlit.
"""
