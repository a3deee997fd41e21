"""In 中文 the sidebar's sentences open in Chinese (word-level, cut by jieba), follow the language switch while
untouched, stay as typed once edited; MiniLM, which reads most Chinese as [UNK], opens on the English example and
says why in Chinese."""
from __future__ import annotations

import re

from apptest_utils import figures, new_app

ZH = "小猫坐在垫子上。\n小狗追着小猫跑！"
EN = "The cat sat on the mat.\nThe dog chased the cat!"


def run(page: str | None = None, **query):
    at = new_app(**query)
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def ticks(at) -> set[str]:
    return {t for f in figures(at) for axis in ("xaxis", "yaxis") for t in f["layout"].get(axis, {}).get("ticktext", [])}


def test_the_default_text_is_chinese_in_chinese():
    at = run(lang="zh")
    assert at.sidebar.text_area(key="shared_text").value == ZH
    assert at.query_params["text"] == ZH
    assert {"0: 小猫", "2: 垫子"} <= ticks(at), sorted(ticks(at))[:20]  # the explorer's figures are of its words
    assert not any(re.search(r"\b(cat|mat|dog)\b", t) for t in ticks(at))


def test_the_untouched_default_follows_the_switch_and_typed_text_stays():
    at = run()
    assert at.sidebar.text_area(key="shared_text").value == EN
    at.sidebar.radio(key="ui_lang").set_value("zh").run()
    assert at.sidebar.text_area(key="shared_text").value == ZH
    at.sidebar.radio(key="ui_lang").set_value("en").run()
    assert at.sidebar.text_area(key="shared_text").value == EN
    at.sidebar.text_area(key="shared_text").set_value("my own words").run()
    at.sidebar.radio(key="ui_lang").set_value("zh").run()
    assert at.sidebar.text_area(key="shared_text").value == "my own words"


def test_a_link_with_its_own_text_keeps_it_in_chinese():
    at = run(lang="zh", text="我们 学习")
    assert at.sidebar.text_area(key="shared_text").value == "我们 学习"


def test_minilm_opens_on_the_english_example_in_chinese_and_says_why():
    at = run("pages/minilm.py", lang="zh")
    rows = at.dataframe[0].value if at.dataframe else None
    captions = " ".join(c.value for c in at.caption)
    assert "[UNK]" in captions and "英文" in captions, captions
    labels = [o for o in at.selectbox(key="minilm_batch").options]
    assert labels[0].startswith("0: the cat sat"), labels  # MiniLM's uncased WordPiece
    assert rows is None or "[UNK]" not in rows.to_string()
