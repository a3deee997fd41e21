"""On the English page each of the tutorials' Chinese comments stands under its own line, after its English
translation, so a reader sees which Chinese says what; the Chinese page shows each comment once, in the tutorial's
words."""
from __future__ import annotations

from apptest_utils import new_app
from transformer_core.analysis.tutorial_lines import lines_for


def tutorial_block(at) -> str:
    return next(m.value for m in at.markdown if "scores = torch.matmul(Q,K.transpose(-2,-1))" in m.value)


def test_each_chinese_comment_follows_its_english_translation():
    at = new_app(q="1", k="2")
    at.run()
    assert not at.exception, at.exception
    block = tutorial_block(at)
    first, second = lines_for("scores")
    parts = block.split(f"`{second.code}`")
    assert len(parts) == 2, block  # the second line's code splits the block into the two lines
    for part, line in zip(parts, (first, second)):
        english, chinese = part.find(line.comment.split(" ")[0]), part.find(line.original()[:4])
        assert 0 <= english < chinese, (line.comment, part)  # its translation, then its own Chinese
    assert not [c.value for c in at.caption if "own comments" in c.value]  # no list of Chinese far from its lines


def test_the_chinese_page_shows_each_comment_once():
    at = new_app(q="1", k="2", lang="zh")
    at.run()
    block = tutorial_block(at)
    for line in lines_for("scores"):
        assert block.count(line.original()[:6]) == 1, block
