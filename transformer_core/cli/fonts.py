"""Which characters of a slide no installed font can draw (they would come out as boxes, "tofu").

Chromium (and so kaleido) finds fonts through fontconfig; ``fc-list --format '%{charset}'`` prints every
installed font's coverage as hexadecimal code-point ranges (``20-7e a0-17f …``), in one call of about
0.05 s. A character none of them covers is drawn as a box. Characters that are never drawn on their
own (format characters such as ZWJ, variation selectors, emoji skin-tone and tag modifiers combine
into the glyph before them) are not asked about.

Fonts for Chinese and emoji on Debian: ``apt-get install -y fonts-noto-cjk fonts-noto-color-emoji``.
"""
from __future__ import annotations

import bisect
import shutil
import subprocess
import unicodedata
from collections.abc import Iterable

from ..text.i18n import _, ngettext

FONT_PACKAGES = "fonts-noto-cjk fonts-noto-color-emoji"
_NOT_DRAWN_ALONE = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF), (0x1F3FB, 0x1F3FF), (0xE0020, 0xE007F))


def covered_ranges(env: dict | None = None) -> list[tuple[int, int]] | None:
    """Sorted, merged ``(first, last)`` code-point ranges some installed font covers; None if fontconfig's
    ``fc-list`` is missing or fails (then nothing can be said)."""
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return None
    try:
        out = subprocess.run([fc_list, "--format", "%{charset}\n"], capture_output=True, text=True, timeout=30,
                             env=env, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    ranges = []
    for item in out.split():
        first, _, last = item.partition("-")
        try:
            ranges.append((int(first, 16), int(last or first, 16)))
        except ValueError:
            continue
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def _needs_glyph(char: str) -> bool:
    code = ord(char)
    if char.isspace() or unicodedata.category(char) in ("Cf", "Cc", "Zl", "Zp"):
        return False
    return not any(lo <= code <= hi for lo, hi in _NOT_DRAWN_ALONE)


def missing_characters(texts: Iterable[str], ranges: list[tuple[int, int]] | None = None,
                       env: dict | None = None) -> list[str] | None:
    """Distinct characters of ``texts``, in order of appearance, that no installed font covers.

    None when the fonts cannot be listed (no ``fc-list``). ``ranges`` (from :func:`covered_ranges`) may be
    given to skip the call.
    """
    ranges = covered_ranges(env) if ranges is None else ranges
    if ranges is None:
        return None
    starts = [r[0] for r in ranges]
    missing = []
    for char in dict.fromkeys("".join(texts)):
        if not _needs_glyph(char):
            continue
        i = bisect.bisect_right(starts, ord(char)) - 1
        if i < 0 or ord(char) > ranges[i][1]:
            missing.append(char)
    return missing


def missing_font_message(missing: list[str], fmt: str) -> str:
    """One line saying which characters will be boxes and what to install."""
    shown = " ".join(missing[:12]) + (" … " + _("({n} in all)").format(n=len(missing)) if len(missing) > 12 else "")
    names = ", ".join(f"U+{ord(c):04X}" for c in missing[:3])
    return ngettext("no installed font has {n} character of this figure ({shown}; {names}): the {fmt} will draw it "
                    "as boxes. Install fonts that cover them, e.g. on Debian `apt-get install -y {packages}`",
                    "no installed font has {n} characters of this figure ({shown}; {names}): the {fmt} will draw "
                    "them as boxes. Install fonts that cover them, e.g. on Debian `apt-get install -y {packages}`",
                    len(missing)).format(n=len(missing), shown=shown, names=names + (" …" if len(missing) > 3 else ""),
                                         fmt=fmt.upper(), packages=FONT_PACKAGES)


def figure_texts(fig) -> list[str]:
    """Every text a figure draws: titles, subtitles, tick labels, annotations, cell texts (HTML unescaped)."""
    import html

    out: list[str] = []

    def walk(node, key=None):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, (list, tuple)):
            for v in node:
                walk(v, key)
        elif isinstance(node, str) and key in ("text", "ticktext"):
            out.append(html.unescape(node))

    walk(fig.to_plotly_json())
    return out
