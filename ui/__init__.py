"""Streamlit glue shared by the pages: controls and URL state, cached compute, stage views.

Pages stay thin (controls → cached compute → figures); no tensor math here either:
numbers come from :mod:`transformer_core` traces.
"""
