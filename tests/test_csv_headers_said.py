"""CSV files keep English column headers in every language (scripts read them; the JSON keys and the export command
are English too); in 中文 each CSV button says so, in Chinese, and the README says why."""
from __future__ import annotations

import re
from pathlib import Path

from apptest_utils import new_app


def csv_buttons(at):
    return [b.proto for b in at.get("download_button") if "CSV" in b.proto.label]


def test_chinese_csv_buttons_say_why_their_headers_are_english():
    at = new_app(lang="zh", tables="1")
    at.run()
    assert not at.exception, at.exception
    buttons = csv_buttons(at)
    assert buttons, [b.proto.label for b in at.get("download_button")]
    assert all(re.search(r"列名.*英文", b.help) for b in buttons), [b.help for b in buttons]


def test_english_csv_buttons_need_no_note():
    at = new_app(tables="1")
    at.run()
    assert csv_buttons(at) and not [b.help for b in csv_buttons(at) if "English" in b.help]


def test_the_readme_says_why_csv_headers_are_english():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert "CSV column headers stay English" in " ".join(readme.split()) and "CSV 文件的列名保持英文" in readme
