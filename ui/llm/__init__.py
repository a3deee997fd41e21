"""The SmolLM2-135M page's compute and sections (issue 32)."""
