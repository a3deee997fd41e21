"""The long-inputs tab's top-5 tables show tokens as the model wrote them (a data table is plain text: no Markdown
escapes), and in 中文 the tab says, in Chinese, why its sentence stays English."""
from __future__ import annotations

import re

import pytest

from apptest_utils import new_app


@pytest.fixture(scope="module")
def _smollm2(smollm2_or_skip):
    return smollm2_or_skip


def test_a_top_table_cell_is_the_token_as_written():
    from ui.modern.long_online import _top_table

    table = _top_table([(':")', 7, 0.5), ("␣Berlin", 8, 0.25)], "every key")
    assert table["every key"].tolist() == [':")  50.0%', "␣Berlin  25.0%"]


def test_the_tabs_tables_hold_no_backslash_and_chinese_says_why_english(_smollm2):
    at = new_app(section="Long inputs", lang="zh")
    at.switch_page("pages/modern.py").run()
    assert not at.exception, at.exception
    cells = [str(v) for frame in at.dataframe for v in frame.value.to_numpy().ravel()]
    assert len(cells) >= 15 and not [c for c in cells if "\\" in c], cells
    notes = " ".join(c.value for c in at.caption)
    assert re.search(r"英文.*SmolLM2.*英语", notes), notes
