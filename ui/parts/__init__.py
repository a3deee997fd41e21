"""Page pieces shared by several pages: head view, explain panel, token table and downloads, numbers, labels, tutorial lines. Imports shell and transformer_core, never a page room."""
