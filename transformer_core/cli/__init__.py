"""The export command (``attention-export`` or ``python -m transformer_core.cli``): ``args`` parses and
checks the command line, ``slides`` lays figures out and renders images, ``export`` runs a model and writes
the file.

The top room: may import every other room; never Streamlit.
"""
