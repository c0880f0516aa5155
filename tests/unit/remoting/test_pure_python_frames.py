"""The Python frame decoder (all there is when the compiled one cannot be built) passes the
command and hostile-frame tests too: they run here again in a child with ``PYROCKETMQ_PURE_PYTHON=1``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
MODULES = ["test_command.py", "test_hostile_frames.py"]


def test_the_frame_tests_pass_in_pure_python() -> None:
    env = dict(os.environ, PYROCKETMQ_PURE_PYTHON="1")
    probe = subprocess.run(
        [sys.executable, "-c", "from pyrocketmq.remoting import command; print(command._compiled is None)"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert probe.stdout.strip() == "True", "PYROCKETMQ_PURE_PYTHON=1 did not select the Python frame decoder"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *(str(HERE / m) for m in MODULES)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0 and " passed" in done.stdout, done.stdout[-4000:] + done.stderr[-2000:]
