"""The distribution users install: ``python -m build`` makes an sdist and, from it, a wheel under
the distribution name (``pyrocketmq-k8s``) with the compiled store and frame modules inside; the
wheel installed into a fresh venv runs the README's quickstart."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _one(paths: list[Path]) -> Path:
    assert len(paths) == 1, paths
    return paths[0]


def test_the_wheel_installs_in_a_fresh_venv_and_runs_the_quickstart(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    built = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist),
                            str(ROOT)], capture_output=True, text=True, timeout=600)  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    _one(sorted(dist.glob("pyrocketmq_k8s-*.tar.gz")))
    wheel = _one(sorted(dist.glob("pyrocketmq_k8s-*.whl")))
    names = zipfile.ZipFile(wheel).namelist()
    for compiled in ("pyrocketmq/broker/store/_native", "pyrocketmq/remoting/_frames"):
        assert any(n.startswith(compiled) and n.endswith(".so") for n in names), (
            f"{compiled}*.so not in {wheel.name}"
        )
    assert "pyrocketmq/operator/handlers.py" in names and "pyrocketmq/cli.py" in names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    home = tmp_path / "qs"
    cli = str(venv / "bin" / "pyrocketmq")
    try:
        run = subprocess.run([cli, "quickstart", "--home", str(home), "--count", "3"],
                             capture_output=True, text=True, timeout=180, cwd=tmp_path)  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        assert "sent 3 messages, read 3 back" in run.stdout
    finally:
        stop = subprocess.run([cli, "quickstart", "--home", str(home), "--stop"],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert stop.returncode == 0 and "stopped broker" in stop.stdout, stop.stdout + stop.stderr
