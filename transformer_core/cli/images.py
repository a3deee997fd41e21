"""Checks of a rendered image before it is written: PNG bytes with a valid header of a drawable size, an SVG that
is well-formed XML with an ``<svg>`` root, and a ``--scale`` that leaves at least one pixel a side.
"""
from __future__ import annotations

import math
import struct
import xml.etree.ElementTree as ET
import zlib

from ..text.i18n import _
from .args import ExportError, UsageError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def check_image(data: bytes | str, fmt: str) -> None:
    """Refuse PNG/SVG bytes that are not a drawable image, before anything is written.

    A PNG must start with its signature and an ``IHDR`` chunk (right length, right CRC) of at least 1×1 px and
    at most :data:`~transformer_core.cli.args.MAX_PIXELS` a side; an SVG must be well-formed XML whose root is
    ``<svg>``. (At ``--scale 0.001`` kaleido returned 3 bytes, which were written as ``x.png`` with exit 0.)

    Raises:
        ExportError: not a valid image (nothing is written).
    """
    if fmt not in ("png", "svg"):
        return
    why = _png_problem(data) if fmt == "png" else _svg_problem(data)
    if why:
        raise ExportError(_("{fmt} export produced no valid image ({why}); nothing was written").format(
            fmt=fmt.upper(), why=why))


def _png_problem(data: bytes | str) -> str | None:
    from .args import MAX_PIXELS

    if not isinstance(data, bytes) or not data.startswith(PNG_SIGNATURE):
        return _("{n} bytes without the PNG signature").format(n=len(data))
    if len(data) < 8 + 25 + 12 or data[12:16] != b"IHDR" or struct.unpack(">I", data[8:12])[0] != 13:
        return _("{n} bytes without a PNG header").format(n=len(data))
    width, height = struct.unpack(">II", data[16:24])
    if struct.unpack(">I", data[29:33])[0] != zlib.crc32(data[12:29]):
        return _("a damaged PNG header")
    if not (1 <= width <= MAX_PIXELS and 1 <= height <= MAX_PIXELS):
        return _("{width}×{height} px").format(width=width, height=height)
    return None


def _svg_problem(data: bytes | str) -> str | None:
    try:
        root = ET.fromstring(data)
    except ET.ParseError as err:
        return _("not well-formed XML: {detail}").format(detail=err)
    if root.tag.rsplit("}", 1)[-1] != "svg":
        return _("no <svg> element")
    return None


def check_draws_pixels(width: int, height: int, scale: float) -> None:
    """Raises UsageError when ``--scale`` leaves less than 1 px on a side: an empty image, which Chromium returns
    as a few bytes that are no PNG (``--scale 0.001``, ``1e-9``, ``1e-300``)."""
    if min(width, height) * scale < 1:
        exact = 1 / min(width, height)
        step = 10.0 ** (math.floor(math.log10(exact)) - 1)
        least = math.ceil(exact / step) * step  # two figures, rounded up: the shown scale draws 1 px
        raise UsageError(_("--scale {scale:g} would draw a {width}×{height} px image, which is empty: use --scale "
                           "{least:g} or more").format(scale=scale, width=f"{width * scale:.2g}",
                                                         height=f"{height * scale:.2g}", least=float(f"{least:.2g}")))
