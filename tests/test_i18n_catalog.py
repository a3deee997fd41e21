"""The translation catalogs: every message the code marks has a Chinese translation, none empty or fuzzy,
every placeholder kept; the catalogs are up to date with the code, the committed .mo is the compiled .po, and every
lesson text has its Chinese twin with the same sections.

The checker is also run on a made-up catalog holding an empty, a fuzzy and a placeholder-losing entry, so it is
shown to fail on each of them.
"""
from __future__ import annotations

import gettext
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parent.parent
LOCALES = ROOT / "transformer_core" / "locales"
PO = LOCALES / "zh" / "LC_MESSAGES" / "messages.po"
PLACEHOLDER = re.compile(r"\{[a-z_]*\}")


def problems(catalog: Catalog) -> list[str]:
    """Entries without a usable Chinese translation: empty, fuzzy, or with placeholders changed."""
    out = []
    for msg in catalog:
        if not msg.id:
            continue
        ids = [msg.id] if isinstance(msg.id, str) else list(msg.id)
        strings = [msg.string] if isinstance(msg.string, str) else list(msg.string)
        if msg.fuzzy:
            out.append(f"fuzzy: {ids[0]!r}")
        if not all(strings):
            out.append(f"empty: {ids[0]!r}")
            continue
        want = sorted(set(PLACEHOLDER.findall(ids[0])))
        for s in strings:
            if sorted(set(PLACEHOLDER.findall(s))) != want:
                out.append(f"placeholders {want} changed in {ids[0]!r} → {s!r}")
    return out


def load(path: Path) -> Catalog:
    with path.open("rb") as f:
        return read_po(f)


def test_every_message_has_a_chinese_translation():
    catalog = load(PO)
    assert len(catalog) > 300  # the whole app, not a sample
    assert problems(catalog) == []


def test_checker_fails_on_empty_fuzzy_and_lost_placeholders():
    catalog = Catalog(locale="zh")
    catalog.add("Head", "头")
    catalog.add("Layer", "")
    catalog.add("Masks lab", "掩码实验室", flags=["fuzzy"])
    catalog.add("Split into {h} heads", "拆分为多个头")
    assert problems(catalog) == ["empty: 'Layer'", "fuzzy: 'Masks lab'",
                                 "placeholders ['{h}'] changed in 'Split into {h} heads' → '拆分为多个头'"]


def test_catalogs_are_up_to_date_with_the_code_and_the_mo_is_compiled():
    """``python scripts/i18n.py --check``: a fresh extraction equals the .pot; the .mo equals the compiled .po."""
    out = subprocess.run([sys.executable, "scripts/i18n.py", "--check"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    template = load(LOCALES / "messages.pot")
    assert {m.id if isinstance(m.id, str) else m.id[0] for m in template if m.id} \
        == {m.id if isinstance(m.id, str) else m.id[0] for m in load(PO) if m.id}


def test_the_compiled_catalog_is_what_gettext_reads():
    zh = gettext.translation("messages", LOCALES, languages=["zh"])
    assert zh.gettext("Masks lab") == "掩码实验室"
    assert zh.gettext("Causal mask") == "因果掩码"
    assert zh.ngettext("{n} head", "{n} heads", 3).format(n=3) == "3 个头"
    assert gettext.NullTranslations().gettext("Masks lab") == "Masks lab"  # English: the messages as written


@pytest.mark.parametrize("term, chinese", [
    ("Causal mask", "因果掩码"), ("Padding mask", "填充掩码"), ("weights", "注意力权重"),
    ("Masked scores (blocked = blank = −∞)", "掩码后的注意力分数（屏蔽 = 空白 = −∞）"),
    ("Multi-head pipeline", "多头注意力流水线"), ("Feed-forward", "前馈网络"),
])
def test_the_tutorials_terms(term, chinese):
    assert gettext.translation("messages", LOCALES, languages=["zh"]).gettext(term) == chinese


def test_languages_agree():
    from transformer_core.text import i18n as core
    from ui.shell import i18n as app

    assert app.LANGUAGES == core.LANGUAGES and app.LOCALES == core.LOCALES
    assert [app.from_locale(x) for x in ("zh-CN", "zh_TW", "zh", "en-US", "fr", None)] == ["zh"] * 3 + ["en"] * 3


@pytest.mark.parametrize("page", sorted(p.stem for p in (ROOT / "assets").glob("*.md")))
def test_every_lesson_text_has_its_chinese_twin(page):
    from ui.lessons.lesson_figures import sections

    english, chinese = sections(page, "en"), sections(page, "zh")
    assert list(chinese) == list(english)
    for name, body in chinese.items():
        assert body and re.search(r"[\u4e00-\u9fff]", body), name
        # formulas stay: the same $$ display blocks in both
        assert body.count("$$") == english[name].count("$$"), name
