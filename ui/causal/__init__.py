"""The causal page's compute and sections: its runs, head ablation, predictions, the faded overview. Imports parts, shell and transformer_core, never another page room."""
