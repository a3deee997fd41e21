"""``python -m transformer_core.cli``: the export command (same as ``attention-export``)."""
import sys

from .export import main

sys.exit(main())
