"""The README's main job: ``pyrocketmq quickstart`` starts servers, sends and reads a sample, and stops."""

from __future__ import annotations

import subprocess
import sys


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pyrocketmq", "quickstart", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_quickstart_round_trip_then_stop(tmp_path):
    home = str(tmp_path / "qs")
    try:
        first = _run("--home", home, "--count", "6")
        assert first.returncode == 0, first.stderr + first.stdout
        assert "sent 6 messages, read 6 back" in first.stdout
        assert first.stdout.count("  read   ") == 6
        assert "stop:" in first.stdout and home in first.stdout
        # A second run reuses the running servers and reads only the new messages.
        second = _run("--home", home, "--count", "2")
        assert second.returncode == 0, second.stderr + second.stdout
        assert second.stdout.count("  read   ") == 2
    finally:
        stopped = _run("--home", home, "--stop")
    assert stopped.returncode == 0
    assert "stopped broker" in stopped.stdout and "stopped namesrv" in stopped.stdout
    assert "nothing running" in _run("--home", home, "--stop").stdout


def test_quickstart_bad_argument_prints_usage():
    out = _run("--count", "zero")
    assert out.returncode == 2
    assert "usage:" in out.stderr and "Traceback" not in out.stderr
