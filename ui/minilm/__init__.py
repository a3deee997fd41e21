"""The MiniLM page's compute and sections: its runs, what attention moves, head ablation, the WordPiece note. Imports parts, shell and transformer_core, never another page room."""
