"""Fonts for every drawing: a PNG of Chinese draws real glyphs when the fonts are installed, and the
export command warns, once, when no installed font covers the text.

"No font" is made real, not mocked: a fontconfig file that lists only DejaVu (``FONTCONFIG_FILE``), which
both ``fc-list`` and the Chromium kaleido starts obey. Under it the same rendering gives two identical
boxes for two different characters — the glyph test below fails there, as it should.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_core.cli import export
from transformer_core.cli.fonts import covered_ranges, missing_characters, missing_font_message

ROOT = Path(__file__).resolve().parent.parent
DEJAVU = Path("/usr/share/fonts/truetype/dejavu")
SENTENCE = "我们今天学习注意力机制"
needs_chromium = pytest.mark.skipif(export.find_chromium() is None, reason="no Chromium: PNG export not testable")
needs_fc = pytest.mark.skipif(covered_ranges() is None, reason="fontconfig's fc-list is not installed")
needs_cjk = pytest.mark.skipif(bool(covered_ranges() is None or missing_characters(["猫狗"])),
                               reason="no CJK font installed (apt-get install -y fonts-noto-cjk)")
needs_dejavu = pytest.mark.skipif(not DEJAVU.is_dir(), reason="DejaVu fonts not in /usr/share/fonts/truetype/dejavu")

GLYPHS = r'''
import io, sys, numpy as np, plotly.graph_objects as go
from PIL import Image
from transformer_core.cli.slides import render_image
def png(ch):
    fig = go.Figure(layout=dict(width=160, height=160, margin=dict(l=0, r=0, t=0, b=0), xaxis_visible=False,
                                yaxis_visible=False, plot_bgcolor="white", paper_bgcolor="white"))
    fig.add_annotation(text=ch, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font=dict(size=110, color="black"))
    return np.asarray(Image.open(io.BytesIO(render_image(fig, "png", width=160, height=160))).convert("L")) < 128
a, b = png(sys.argv[1]), png(sys.argv[2])
print(int(a.sum()), int(b.sum()), float((a != b).mean()))
'''


def only_dejavu(tmp_path: Path) -> dict:
    """An environment whose fontconfig knows DejaVu only (no CJK, no emoji)."""
    conf = tmp_path / "fonts.conf"
    conf.write_text('<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd"><fontconfig>'
                    f'<dir>{DEJAVU}</dir><cachedir>{tmp_path / "cache"}</cachedir></fontconfig>')
    return {**os.environ, "FONTCONFIG_FILE": str(conf), "PYTHONPATH": str(ROOT)}


def glyph_pixels(env: dict, a: str, b: str) -> tuple[int, int, float]:
    out = subprocess.run([sys.executable, "-c", GLYPHS, a, b], capture_output=True, text=True, env=env,
                         timeout=180, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    ink_a, ink_b, differ = out.stdout.split()
    return int(ink_a), int(ink_b), float(differ)


@needs_fc
@needs_dejavu
def test_missing_characters_follow_the_installed_fonts(tmp_path):
    env = only_dejavu(tmp_path)
    assert missing_characters([f"the cat · {SENTENCE} 🦒"], env=env) == list(dict.fromkeys(SENTENCE)) + ["🦒"]
    assert missing_characters(["the cat sat — ok?"], env=env) == []
    # joiners, variation selectors and skin tones are not drawn alone: only the emoji themselves are asked about
    assert missing_characters(["👍🏽 👨\u200d👩\u200d👧 #️⃣"], env=env) == ["👍", "👨", "👩", "👧", "\u20e3"]


@needs_fc
@needs_cjk
def test_installed_noto_fonts_cover_chinese_and_emoji():
    assert missing_characters([SENTENCE, "注意力分数 缩放点积注意力 👍🏽 🦒 #️⃣"]) == []


@needs_chromium
@needs_cjk
@needs_dejavu
def test_png_of_chinese_draws_real_glyphs(tmp_path):
    ink_a, ink_b, differ = glyph_pixels({**os.environ, "PYTHONPATH": str(ROOT)}, "猫", "狗")
    assert ink_a > 500 and ink_b > 500
    assert differ > 0.03  # two characters, two shapes
    # the same rendering without a CJK font: two identical boxes (what the glyph test exists to catch)
    box_a, box_b, same = glyph_pixels(only_dejavu(tmp_path), "猫", "狗")
    assert box_a == box_b and same == 0.0


def run_cli(env: dict, tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "transformer_core.cli", "--text", text, "--head", "0",
                           "--out", str(tmp_path / "slide.png")], capture_output=True, text=True, env=env,
                          timeout=240, cwd=ROOT)


@needs_chromium
@needs_fc
@needs_dejavu
def test_export_warns_once_when_no_font_covers_the_text(tmp_path):
    out = run_cli(only_dejavu(tmp_path), tmp_path, SENTENCE)
    assert out.returncode == 0, out.stderr  # the slide is still written
    warnings = [line for line in out.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, out.stderr
    assert "5 characters" not in warnings[0] and "我" in warnings[0] and "fonts-noto-cjk" in warnings[0]
    assert (tmp_path / "slide.png").stat().st_size > 1000


@needs_chromium
@needs_cjk
def test_export_is_silent_when_the_fonts_are_installed(tmp_path):
    out = run_cli({**os.environ, "PYTHONPATH": str(ROOT)}, tmp_path, SENTENCE)
    assert out.returncode == 0 and "warning" not in out.stderr, out.stderr


def test_message_names_the_characters_and_the_packages():
    line = missing_font_message(["猫", "狗"], "png")
    assert "2 characters" in line and "猫 狗" in line and "U+732B" in line and "fonts-noto-color-emoji" in line
    assert "\n" not in line
