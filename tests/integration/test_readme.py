"""The README's first steps, run as written: the shell block after the quickstart and the Python
client snippet, against a name server and broker of the test's own (their address replaces the
README's 127.0.0.1:9876; nothing else is changed)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DEFAULT_NS = "127.0.0.1:9876"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def first_block(lang: str, must_contain: str) -> str:
    found = [b for b in blocks(lang) if must_contain in b]
    assert found, f"no ```{lang} block in README.md contains {must_contain!r}"
    return found[0]


def test_the_first_steps_shell_block_runs_as_written(namesrv, broker, tmp_path):
    script = first_block("sh", "pyrocketmq produce")
    assert script.startswith(". .venv/bin/activate\n")
    venv = Path(sys.executable).parent.parent
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    # The block sources .venv/bin/activate from the checkout: run it where that is the test's venv.
    work = ROOT if (ROOT / ".venv").resolve() == venv.resolve() else tmp_path
    if work == tmp_path:
        (tmp_path / ".venv").symlink_to(venv)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script.replace(DEFAULT_NS, namesrv.addr)],
                          cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "received 3 message(s) from Orders" in done.stdout, done.stdout
    assert done.stdout.count("body=hello") == 3


def test_the_python_client_snippet_prints_what_it_sent_and_received_and_exits(namesrv, broker, tmp_path):
    snippet = first_block("python", "SyncPushConsumer(")
    path = tmp_path / "snippet.py"
    path.write_text(snippet.replace(DEFAULT_NS, namesrv.addr))
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    sent = re.search(r"^sent (\w+) to queue \d+ at offset \d+$", done.stdout, re.M)
    assert sent, done.stdout
    assert f"received {sent.group(1)} paid b'{{\"id\": 1}}'" in done.stdout, done.stdout
