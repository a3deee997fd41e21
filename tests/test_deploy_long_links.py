"""Long links through nginx: the app accepts a sentence of up to 4,000 characters in its link
(?text=…); nginx must pass every such link to Streamlit. With nginx's default buffers (4 × 8k) a link of
~1,000 Chinese characters (> 8 KB percent-encoded) was answered "414 Request-URI Too Large"."""
from __future__ import annotations

import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "deploy")]

import run_local  # noqa: E402

pytestmark = pytest.mark.skipif(run_local.nginx_binary() is None,
                                reason="nginx is not installed (Debian: apt-get install -y nginx; .ci/run installs it)")
APP_MAX_CHARS = 4000  # the sentence box's limit (ui: MAX_CHARS)


def status(url: str) -> int:
    try:
        return urllib.request.urlopen(url, timeout=60).status
    except urllib.error.HTTPError as err:
        return err.code


def test_long_chinese_and_emoji_links_pass_through_nginx():
    links = {"2,000 Chinese characters": "猫" * 2000,                 # 18 KB percent-encoded
             f"{APP_MAX_CHARS:,} Chinese characters": "猫" * APP_MAX_CHARS,  # 36 KB
             f"{APP_MAX_CHARS:,} emoji": "🐈" * APP_MAX_CHARS}           # 48 KB: the longest link the app takes
    with run_local.cluster(1, timeout=120) as c:
        for what, text in links.items():
            url = f"{c.url}/?{urllib.parse.urlencode({'text': text, 'causal': 1})}"
            assert status(url) == 200, f"a link of {what} ({len(url):,} bytes) was refused"
