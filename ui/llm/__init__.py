"""The real-LLM page (SmolLM2-135M or an operator's local checkpoint): its model list, compute and sections."""
