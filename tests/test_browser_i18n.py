"""Switching the language keeps the view, in headless Chromium: on a lesson tab, English → 中文 → English
keeps the same tab (Streamlit resets a tab whose label changes, streamlit #8239), the same sentence and head, and
the pickers show their options in the new language (not a stale label). A ``?lang=zh`` link opens in Chinese."""
from __future__ import annotations

import urllib.parse

import pytest

from browser_utils import chromium_missing, wait_idle

_missing = chromium_missing()
if _missing:
    print(f"SKIPPING browser i18n tests: {_missing}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(_missing), reason=str(_missing))]

TEXT = "The cat sat on the mat.\nIt was tired."


def selected_tab(page) -> str:
    return page.locator('[role="tab"][aria-selected="true"]').first.inner_text().strip()


def picker(page, label: str) -> str:
    """The value a selectbox shows (its input's text), found by its label."""
    box = page.locator('[data-testid="stMain"] [data-testid="stSelectbox"], [data-testid="stSidebar"] [data-testid="stSelectbox"]')
    return box.filter(has=page.get_by_text(label, exact=True)).first.locator("input").input_value()


def switch_to(page, name: str) -> None:
    page.locator('[data-testid="stSidebar"] [data-testid="stRadio"]').first.get_by_text(name, exact=True).click()
    page.wait_for_timeout(500)
    wait_idle(page)


def query(page) -> dict:
    return {k: v[-1] for k, v in urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query).items()}


def test_switching_language_on_a_lesson_tab_keeps_tab_sentence_and_head(server, chromium):
    params = urllib.parse.urlencode({"text": TEXT, "section": "Two conventions", "sentence": 1, "head": 3,
                                     "lang": "en"})
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}/masks_lab?{params}")
    wait_idle(page)
    assert selected_tab(page) == "Two conventions"
    assert picker(page, "Head") == "3" and picker(page, "Sentence").startswith("1: It was tired")

    switch_to(page, "中文")
    assert selected_tab(page) == "两种约定"  # the same tab, its label in Chinese
    assert page.get_by_role("heading", name="2 · 两个教程的两种约定").count() == 1
    assert picker(page, "头") == "3" and picker(page, "句子").startswith("1: It was tired")
    q = query(page)
    assert (q["lang"], q["section"], q["head"], q["sentence"]) == ("zh", "Two conventions", "3", "1")
    assert page.locator('[data-testid="stSidebar"] textarea').first.input_value() == TEXT

    switch_to(page, "English")
    assert selected_tab(page) == "Two conventions"
    assert picker(page, "Head") == "3" and picker(page, "Sentence").startswith("1: It was tired")
    assert query(page)["lang"] == "en"
    page.close()


def test_translated_option_labels_are_not_stale_after_a_switch(server, chromium):
    """The stage buttons and the tokenizer picker show the new language's labels after the switch."""
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}/?{urllib.parse.urlencode({'text': TEXT, 'stage': 'masked_scores', 'lang': 'en'})}")
    wait_idle(page)
    assert picker(page, "Tokenizer").startswith("Word-level")
    switch_to(page, "中文")
    assert picker(page, "分词器").startswith("词级")
    pressed = page.locator('[data-testid="stButtonGroup"] button[aria-pressed="true"], '
                           '[data-testid="stButtonGroup"] button[aria-checked="true"]').all_inner_texts()
    assert "掩码后" in [t.strip() for t in pressed]
    assert query(page)["stage"] == "masked_scores"
    page.close()


def test_a_chinese_link_opens_in_chinese_with_chinese_words(server, chromium):
    params = urllib.parse.urlencode({"text": "我们今天学习注意力机制", "lang": "zh", "step": "Attention"})
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{server}/pipeline?{params}")
    wait_idle(page)
    assert selected_tab(page) == "注意力"
    assert page.get_by_role("heading", name="多头注意力流水线").count() == 1
    assert page.get_by_text("5 个词元").count() >= 1  # 我们 / 今天 / 学习 / 注意力 / 机制
    assert page.get_by_text("用 sqrt(d_k) 做缩放，防止分数过大。").count() >= 1  # the tutorial's own comment
    page.close()


def test_without_lang_the_page_follows_the_browsers_language(server, chromium):
    context = chromium.new_context(locale="zh-CN", viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.goto(f"{server}/?{urllib.parse.urlencode({'text': TEXT})}")
    wait_idle(page)
    assert page.get_by_role("heading", name="注意力探索器").count() == 1
    assert query(page)["lang"] == "zh"  # written back, so a copied link keeps the language
    context.close()
    context = chromium.new_context(locale="en-US", viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.goto(f"{server}/?{urllib.parse.urlencode({'text': TEXT})}")
    wait_idle(page)
    assert page.get_by_role("heading", name="Attention Explorer").count() == 1
    context.close()
