"""The explorer page's compute and sections. Imports parts, shell and transformer_core, never another page room."""
