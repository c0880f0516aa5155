"""Every package folder is in the wheel: pyproject.toml lists packages one by one (the repository's
top-level folders are mapped into ``pyrocketmq``), so a new sub-package left out of that list runs
from the checkout and breaks only in an installed copy (the images)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_every_package_folder_is_listed_for_the_wheel() -> None:
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = {tool["package-dir"][p] for p in tool["packages"] if p in tool["package-dir"]}
    found = set()
    for top in tool["package-dir"].values():
        base = ROOT / top
        if not base.is_dir() or top == "pyrocketmq":
            continue
        for d in [base, *(p for p in base.rglob("*") if p.is_dir())]:
            if "__pycache__" in d.parts or any(part.startswith(".") for part in d.relative_to(ROOT).parts):
                continue
            if any(d.glob("*.py")):
                found.add(str(d.relative_to(ROOT)))
    assert sorted(found - listed) == [], "add these folders to [tool.setuptools] packages and package-dir"
