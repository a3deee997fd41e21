"""AppTest: in 中文 the KV-cache tab says, in Chinese, why SmolLM2's demo prompt stays English (after a Chinese prompt
20 of its 32 generated tokens are pieces of characters); not in English, nor for the causal model's token ids."""
from __future__ import annotations

import pytest

from apptest_utils import new_app

PAGE = "pages/modern.py"


def captions(**query) -> str:
    at = new_app(section="KV cache", **query)
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    return "\n".join(c.value for c in at.caption)


def test_the_chinese_kv_cache_tab_says_why_the_prompt_is_english():
    from transformer_core.models.gguf_weights import SmolLM2Unavailable
    from transformer_core.models.smollm2 import load_smollm2

    try:
        load_smollm2()
    except SmolLM2Unavailable as err:
        pytest.skip(str(err))
    zh = captions(model="smollm2", lang="zh")
    assert "提示保持英文" in zh and "中国的首都是北京。德国的首都是" in zh, zh
    assert "prompt stays English" not in captions(model="smollm2", lang="en")
    assert "提示保持英文" not in captions(model="causal", lang="zh")
