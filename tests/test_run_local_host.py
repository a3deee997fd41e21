"""deploy/run_local.py --host: nginx on loopback by default (this machine only), on 0.0.0.0 when a teacher
serves the room's network; the replicas stay on loopback either way, and --help says what 0.0.0.0 exposes."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "deploy"))

import run_local  # noqa: E402


def listens(conf: str) -> list[str]:
    return re.findall(r"(?m)^\s*listen\s+(\S+);", conf)


@pytest.mark.parametrize("host, expected", [(None, "127.0.0.1:8080"), ("0.0.0.0", "0.0.0.0:8080"),
                                            ("::", "[::]:8080")])
def test_nginx_listens_on_the_asked_host_and_the_replicas_on_loopback(tmp_path, host, expected):
    kwargs = {} if host is None else {"host": host}
    conf = run_local.render_config(tmp_path, 8080, [8601, 8602], **kwargs)
    assert listens(conf) == [expected]
    assert re.findall(r"(?m)^\s*server\s+(\S+)\s+max_fails", conf) == ["127.0.0.1:8601", "127.0.0.1:8602"]


@pytest.mark.skipif(run_local.nginx_binary() is None, reason="nginx is not installed (apt-get install -y nginx)")
def test_a_config_for_every_network_passes_nginx_t(tmp_path):
    (tmp_path / "tmp").mkdir()
    conf = tmp_path / "nginx.conf"
    conf.write_text(run_local.render_config(tmp_path, 8080, [8601], host="0.0.0.0"))
    out = subprocess.run([run_local.nginx_binary(), "-t", "-p", str(tmp_path), "-c", str(conf)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_help_says_what_0000_exposes():
    out = subprocess.run([sys.executable, "deploy/run_local.py", "--help"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0
    text = " ".join(out.stdout.split())
    assert "--host" in text and "127.0.0.1 (default) serves this machine only" in text and "no login" in text
    assert "0.0.0.0" in run_local.EXPOSED.format(host="0.0.0.0", port=8080)
