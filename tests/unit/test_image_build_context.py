"""The image builds from what docker/Dockerfile copies.

No Docker engine is needed: the build stage's ``COPY`` lines are replayed into a temporary folder
(filtered by ``Dockerfile.dockerignore`` the way BuildKit would include them), and the wheel is built
from there exactly as the image's ``pip wheel`` step does. A package mapped in ``pyproject.toml``
whose folder the Dockerfile forgets to copy makes the wheel build fail here, not in a user's
``docker build``.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "Dockerfile"


def build_stage_copies() -> list[tuple[list[str], str]]:
    """(sources, destination) of each ``COPY`` in the first stage (before the second ``FROM``)."""
    copies, stages = [], 0
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if line.upper().startswith("FROM "):
            stages += 1
            if stages > 1:
                break
        elif line.upper().startswith("COPY ") and stages == 1:
            args = [a for a in shlex.split(line)[1:] if not a.startswith("--")]
            copies.append((args[:-1], args[-1]))
    return copies


def included_by_dockerignore() -> set[str]:
    """Top-level names the build context lets through (``**`` then ``!name`` / ``!name/**`` lines)."""
    names = set()
    for line in (DOCKERFILE.parent / "Dockerfile.dockerignore").read_text().splitlines():
        if line.startswith("!"):
            names.add(line[1:].split("/")[0])
    return names


def mapped_folders() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return project["tool"]["setuptools"]["package-dir"]


def test_every_mapped_package_folder_is_in_the_build_context_and_copied():
    copied = {src.rstrip("/").split("/")[0] for sources, _ in build_stage_copies() for src in sources}
    context = included_by_dockerignore()
    for package, folder in mapped_folders().items():
        top = folder.split("/")[0]
        assert top in copied, f"docker/Dockerfile does not COPY {top}/ (package {package})"
        assert top in context, f"docker/Dockerfile.dockerignore keeps {top}/ out of the build context"


def test_the_wheel_builds_from_the_copied_files(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for sources, dest in build_stage_copies():
        for s in sources:
            path = ROOT / s.rstrip("/")
            target = src / dest if dest not in ("./", ".") else src / path.name
            if path.is_dir():
                shutil.copytree(
                    path, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"), symlinks=True
                )
            else:
                shutil.copy(path, target if dest not in ("./", ".") else src / path.name)
    out = tmp_path / "wheels"
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(src),
        ],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, (
        f"the image's wheel does not build from the copied files:\n{built.stderr[-3000:]}"
    )
    (wheel,) = out.glob("pyrocketmq_k8s-*.whl")  # the distribution pyrocketmq-k8s
    files = set(zipfile.ZipFile(wheel).namelist())
    for package in mapped_folders():
        init_or_module = [f for f in files if f.startswith(package.replace(".", "/") + "/")]
        assert init_or_module, f"the image's wheel has nothing of {package}"
    assert "pyrocketmq/operator/handlers.py" in files
    assert "pyrocketmq/broker/app.py" in files
