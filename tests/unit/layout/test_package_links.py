"""The checkout reads as the package it installs as: ``pyrocketmq/<name>`` links to each top-level
folder that ``pyproject.toml`` maps to ``pyrocketmq.<name>``, so ``import pyrocketmq.broker`` from a
checkout, type checkers and editors all see the same modules the wheel has."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_every_mapped_top_level_folder_is_linked_under_pyrocketmq():
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    tops = {name.split(".")[1]: folder for name, folder in mapping.items() if name.count(".") == 1}
    assert {"remoting", "server", "namesrv", "broker", "client", "operator", "spark"} <= set(tops)
    for name, folder in tops.items():
        link = ROOT / "pyrocketmq" / name
        assert link.is_symlink(), f"pyrocketmq/{name} should link to ../{folder}"
        assert link.resolve() == (ROOT / folder).resolve(), f"pyrocketmq/{name} → {link.resolve()}"
