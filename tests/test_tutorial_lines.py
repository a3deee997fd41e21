"""The tutorials' own lines beside the numbers: every code line and every Chinese comment
shown is the seed's own, and both pages show them."""
from __future__ import annotations

from pathlib import Path

import pytest

from transformer_core.analysis.tutorial_lines import LINES, lines_for
from transformer_core.text.i18n import _, use_language

SEEDS = Path("/work/shared/seeds")
FILES = {"000": "000_c919eb1bd6cfa72f.txt", "001": "001_bf398a7e72995ae3.txt"}
ENTRIES = sorted({(stage, line) for stage, lines in LINES.items() for line in lines}, key=lambda e: (e[0], e[1].code))


def seed_text(seed: str) -> str:
    path = SEEDS / FILES[seed]
    if not path.exists():
        pytest.skip(f"the tutorial seeds are not at {SEEDS}")
    return path.read_text(encoding="utf-8")


def squeeze(text: str) -> str:
    return "".join(text.split())


@pytest.mark.parametrize("stage, line", ENTRIES, ids=[f"{s}-{l.seed}" for s, l in ENTRIES])
def test_code_and_chinese_comment_are_the_seeds_own(stage, line):
    text = seed_text(line.seed)
    code_lines = [ln.split("#")[0].strip() for ln in text.splitlines()]  # a line may end in its comment
    assert line.code in code_lines, f"{line.code!r} is not a line of seed {line.seed}"
    chinese = line.original()
    assert chinese != line.comment, "no Chinese comment in the catalog"
    assert squeeze(chinese) in squeeze(text), f"{chinese!r} is not in seed {line.seed}"


def test_the_comment_follows_the_language():
    line = lines_for("scores")[0]
    with use_language("en"):
        assert line.text() == "scale by sqrt(d_k) to keep the scores from growing too large."
    with use_language("zh"):
        assert line.text() == "用 sqrt(d_k) 做缩放，防止分数过大。"
    assert _("compute the attention scores (raw weights) [batch_size, n_heads, len_q, len_k]", "zh") \
        == "计算注意力分数（原始权重）[batch_size, n_heads, len_q, len_k]"


def test_every_attention_stage_has_a_line():
    for stage in ("q", "k", "v", "scores", "masked_scores", "weights", "context", "projections", "split", "concat",
                  "w_o", "residual", "norm1", "ffn1", "ffn2", "norm2"):
        assert lines_for(stage), stage
    assert lines_for("scores")[1].code == "scores = torch.matmul(Q, K.transpose(-1, -2)) / np.sqrt(d_k)"
    assert any(line.code == "scores.masked_fill_(attn_mask, -1e9)" for line in lines_for("masked_scores"))


@pytest.mark.parametrize("stage", sorted(LINES))
def test_each_stage_lists_seed_000_before_001(stage):
    """The pages list the tutorials' lines in one order everywhere (000, then 001), each seed's lines as written."""
    seeds = [line.seed for line in lines_for(stage)]
    assert seeds == sorted(seeds)
    assert [line for line in lines_for(stage) if line.seed == "001"] == [line for line in LINES[stage] if line.seed == "001"]
