"""One upload limit in bytes, stated once, that every layer agrees with.

The limit is ``ui.explorer.traces.UPLOAD_BYTES`` (32 MB = 32,000,000 bytes). Streamlit's uploader in the browser
refuses a file above ``server.maxUploadSize`` × 10⁶ bytes (it counts decimal MB; on Windows it counts
MiB); Streamlit's server and nginx refuse a request body above ``maxUploadSize`` MiB, which leaves room
for the multipart envelope of a file of the limit's size; the app's own check refuses anything above
the limit, counted in bytes, where those layers do not run. This test reads all three files.
"""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from transformer_core import EncoderConfig, run_toy
from transformer_core.records import serialize
from ui.explorer import traces as views

ROOT = Path(__file__).resolve().parent.parent
ENVELOPE = 4096  # multipart boundary and part headers around the file: a few hundred bytes in practice


def streamlit_max_upload_mb() -> int:
    return tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["server"]["maxUploadSize"]


def nginx_body_bytes() -> int:
    sizes = re.findall(r"(?m)^\s*client_max_body_size\s+(\d+)([kKmMgG]?);", (ROOT / "deploy" / "nginx.conf").read_text())
    assert len(sizes) == 1, sizes
    number, unit = sizes[0]
    return int(number) * {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}[unit.lower()]


def test_every_layer_agrees_with_the_one_limit():
    mb = streamlit_max_upload_mb()
    assert views.UPLOAD_BYTES == mb * 10**6 == 32_000_000       # the browser's own limit, to the byte
    assert views.UPLOAD_LIMITS.size_bytes == views.UPLOAD_BYTES  # the app's own check
    assert nginx_body_bytes() == mb * 2**20                       # nginx = Streamlit's server
    assert nginx_body_bytes() >= views.UPLOAD_BYTES + ENVELOPE    # a file of the limit's size gets through


def test_the_limit_is_stated_once_in_the_readme_and_in_the_uploaders_help():
    stated = "32 MB (32,000,000 bytes)"
    assert stated in views.UPLOAD_HELP
    readme = (ROOT / "README.md").read_text()
    assert readme.count(stated) == 1, readme.count(stated)
    assert "32 MiB" not in readme


def _padded(size: int, filler: str = " ") -> bytes:
    """A valid trace, padded with white space at its end to ``size`` UTF-8 bytes."""
    text = serialize.trace_to_json(run_toy(["the cat sat"], EncoderConfig(d_model=8, n_heads=2, d_ff=16)))
    data = text.encode()
    return data + filler.encode() * (size - len(data))


def test_the_apps_check_counts_bytes_to_the_byte():
    stages = ("weights",)
    trace, why = views.read_upload(_padded(views.UPLOAD_BYTES), stages)
    assert why is None and trace.tokens == (("the", "cat", "sat"),)
    trace, why = views.read_upload(_padded(views.UPLOAD_BYTES + 1), stages)
    assert why == "it is 32,000,001 bytes; at most 32,000,000 bytes can be read"


def test_two_byte_characters_are_counted_as_bytes():
    """16.1 million characters of 'é' are 32.2 MB: the old check counted characters and let them through."""
    doc = json.loads(serialize.trace_to_json(run_toy(["the cat"], EncoderConfig(d_model=8, n_heads=2, d_ff=16))))
    doc["settings"]["name"] = "é" * 16_100_000
    data = json.dumps(doc, ensure_ascii=False).encode()
    assert len(data) > views.UPLOAD_BYTES > len(data.decode())
    trace, why = views.read_upload(data, ("weights",))
    assert trace is None and why.startswith(f"it is {len(data):,} bytes; at most 32,000,000 bytes")
