"""The official RocketMQ 5.x Python client (``rocketmq-python-client`` from PyPI) in a virtualenv of
its own under the cache (its protobuf, grpcio-tools and OpenTelemetry pins never touch the project's
environment), and a runner for ``python5/scenario.py`` under it.

Layout: ``<cache>/py5client-<version>/venv`` plus a ``.installed`` marker written last; a file lock
makes parallel workers install once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

from tests.conformance import maven

VERSION = "5.1.2"
SCENARIO = Path(__file__).with_name("python5") / "scenario.py"


def _root() -> Path:
    return maven.cache_root() / f"py5client-{VERSION}"


def python() -> Path:
    """The client's interpreter, installing the client first if needed (PrerequisiteMissing if PyPI fails)."""
    root = _root()
    exe = root / "venv" / "bin" / "python"
    marker = root / ".installed"
    if marker.exists() and exe.exists():
        return exe
    with maven.file_lock(maven.cache_root() / ".py5client.lock"):
        if marker.exists() and exe.exists():
            return exe
        root.mkdir(parents=True, exist_ok=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(root / "venv")
        proc = subprocess.run([str(exe), "-m", "pip", "install", "-q", f"rocketmq-python-client=={VERSION}"],
                              capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise maven.PrerequisiteMissing(f"pip could not install rocketmq-python-client {VERSION}:\n"
                                            f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        marker.write_text(VERSION + "\n")
    return exe


def run(args: list[Any], *, home: Path, timeout: float = 120) -> dict:
    """Run the scenario with ``args``; its last stdout line is a JSON document (returned)."""
    env = dict(os.environ, HOME=str(home), PYTHONUNBUFFERED="1")  # the client logs under ~/logs
    env.pop("PYTHONPATH", None)
    home.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([str(python()), str(SCENARIO), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env, start_new_session=True)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        raise AssertionError(f"python5 scenario {args} failed: exit {proc.returncode}\n"
                             f"--- stderr ---\n{proc.stderr[-4000:]}\n--- stdout ---\n{proc.stdout[-2000:]}")
    return json.loads(lines[-1])


if __name__ == "__main__":  # install only: python -m tests.conformance.pyclient5
    print(python(), file=sys.stderr)
