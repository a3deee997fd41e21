"""Building the trained causal model costs what a small model should: no compiler machinery imported on the way."""
from __future__ import annotations

import subprocess
import sys


def test_loading_a_checkpoint_does_not_import_torch_dynamo():
    """Building the model drew its embeddings on the meta device, which imports torch._dynamo (~1.5 s of CPU at the
    causal page's first open in every server process, and its memory); the page never compiles anything."""
    code = ("import sys; from transformer_core.models.causal import build_causal_model; build_causal_model(step=0); "
            "print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False", out.stdout + out.stderr
