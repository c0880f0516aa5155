"""What the import-linter contracts in pyproject.toml rely on: the operator stays a namespace
package (import-linter walks it as a root of its own), and every module of the broker sits in a
layer of the broker's layers contract (a module left out would be checked by nothing)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _contract(name_start: str) -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return next(c for c in config["contracts"] if c["name"].startswith(name_start))


def test_the_operator_is_a_namespace_package_walked_as_a_root() -> None:
    assert not (ROOT / "operator" / "__init__.py").exists(), (
        "operator/__init__.py would shadow the stdlib's operator"
    )
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert "pyrocketmq.operator" in config["root_packages"]


def test_every_module_of_the_broker_has_a_layer() -> None:
    layers = _contract("the broker in layers")["layers"]
    named = {m.strip() for layer in layers for m in layer.replace("|", ":").split(":")}
    found = {p.stem if p.is_file() else p.name for p in (ROOT / "broker").iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}
    assert found - named == set(), (
        f"broker modules in no layer of pyproject.toml's contract: {sorted(found - named)}"
    )
    assert named - found == set(), f"layers naming no broker module: {sorted(named - found)}"
