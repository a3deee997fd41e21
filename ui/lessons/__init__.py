"""The lesson pages (masks lab, multi-head pipeline): their prose, figures, compute and steps. Imports parts, shell and transformer_core, never another page room."""
