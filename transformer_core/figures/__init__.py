"""Every Plotly figure builder, pure functions ``trace → go.Figure``: one stage of one head (``stage``), all
heads tiled in one figure (``heads``) and the layer × head overview (``overview``).

The one room of the package that imports plotly. May import every room below it (``text``, ``nn``,
``records``, ``models``, ``analysis``); never Streamlit.
"""
