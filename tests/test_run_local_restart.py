"""`python deploy/run_local.py --replicas 2`: killing one replica no longer stops the class. The
dead replica is restarted on its port (bounded back-off), the other replica and nginx answer the whole time, and
only Ctrl+C stops everything."""
from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "deploy"))

import run_local  # noqa: E402

needs_nginx = pytest.mark.skipif(run_local.nginx_binary() is None, reason="nginx not installed")


def _ok(url: str) -> bool:
    try:
        return urllib.request.urlopen(url, timeout=3).read().strip() == b"ok"
    except OSError:
        return False


def _free_pair() -> int:
    """A base port whose next port is free too."""
    for _ in range(50):
        base = run_local.free_port()
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", base))
                b.bind(("127.0.0.1", base + 1))
            return base
        except OSError:
            continue
    raise RuntimeError("no two free ports in a row")


def test_supervise_backs_off_and_restarts():
    """The back-off without processes: a replica that keeps dying waits 1, 2, 4 … s, capped."""
    class Proc:
        def __init__(self, alive): self.alive, self.returncode, self.pid, self.args = alive, -9, 1, []
        def poll(self): return None if self.alive else -9

    class Nginx:
        polls = 0
        returncode = 0
        def poll(self):
            Nginx.polls += 1
            return None if Nginx.polls < 40 else 0

    starts, said = [], []
    replica = run_local.Replica(1, Proc(False), Path("/dev/null"))
    replica.restart = lambda env: (starts.append(time.monotonic()), setattr(replica, "proc", Proc(False)))
    c = run_local.Cluster("u", [replica], Nginx(), Path("."), extra={"env": {}})
    run_local.supervise(c, poll=0.01, backoff=(0.02, 0.04, 0.08), steady=10, say=lambda m, **_: said.append(m))
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert len(starts) >= 3 and gaps[0] < gaps[1] < gaps[-1] + 0.03 and max(gaps) < 0.2, gaps
    assert said[0].startswith("replica 127.0.0.1:1 exited (code -9); restarting it in 0.02 s")
    assert said[-1] == "nginx exited (code 0); stopping"


@needs_nginx
def test_a_killed_replica_is_restarted_while_nginx_and_the_other_serve():
    base, port = _free_pair(), run_local.free_port()
    proc = subprocess.Popen([sys.executable, "deploy/run_local.py", "--replicas", "2", "--port", str(port),
                             "--base-port", str(base)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: [lines.append(line) for line in proc.stdout], daemon=True).start()

    def wait_for(pattern: str, timeout: float) -> re.Match:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for line in list(lines):
                if m := re.search(pattern, line):
                    return m
            assert proc.poll() is None, "".join(lines)
            time.sleep(0.2)
        raise AssertionError(f"no {pattern!r} in {''.join(lines)}")

    try:
        victim = int(wait_for(rf"replica 127\.0\.0\.1:{base + 1} pid (\d+)", 400).group(1))
        nginx, other = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{base}"
        assert _ok(f"{nginx}/lb-health") and _ok(f"{nginx}/_stcore/health") and _ok(f"{other}/_stcore/health")
        os.kill(victim, signal.SIGKILL)
        wait_for(rf"replica 127\.0\.0\.1:{base + 1} exited \(code -9\); restarting it in 1 s", 30)
        # the whole time: nginx answers itself and through a live replica, the other replica answers
        deadline, checks = time.time() + 120, 0
        while not (_ok(f"http://127.0.0.1:{base + 1}/_stcore/health") and "restarted" in "".join(lines)):
            assert _ok(f"{nginx}/lb-health") and _ok(f"{nginx}/_stcore/health") and _ok(f"{other}/_stcore/health")
            assert proc.poll() is None and time.time() < deadline, "".join(lines)
            checks += 1
            time.sleep(0.5)
        new = int(wait_for(rf"replica 127\.0\.0\.1:{base + 1} restarted \(pid (\d+)\)", 5).group(1))
        assert new != victim and checks >= 2
        assert "stopping" not in "".join(lines)
        assert _ok(f"{nginx}/_stcore/health") and _ok(f"{other}/_stcore/health")
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl+C: everything stops
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:  # fail, but leave no server behind to load the rest of the suite
            for pid in [proc.pid, *map(int, re.findall(r"pid (\d+)", "".join(lines)))]:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            raise
    assert not _ok(f"http://127.0.0.1:{base}/_stcore/health") and not _ok(f"http://127.0.0.1:{port}/lb-health")
