"""Layering of pyrocketmq.operator (a namespace package, which import-linter does not walk; see
pyproject.toml): the pure modules import no kopf, aiohttp, asyncio or client; nothing in the operator
imports the servers; and operator/ stays a namespace package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

OPERATOR = Path(__file__).resolve().parents[3] / "operator"
PURE = ["model.py", "podconf.py", "settings.py", "plan.py", "status.py", "nodeloss.py", "drain.py", "render"]
PURE_FORBIDDEN = ("kopf", "aiohttp", "asyncio", "pyrocketmq.client", "pyrocketmq.operator.kube", "pyrocketmq.operator.handlers")
SERVERS = ("pyrocketmq.broker", "pyrocketmq.namesrv")


def imports(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports (relative imports resolved)."""
    rel = path.relative_to(OPERATOR.parent).with_suffix("")
    package = ["pyrocketmq", *rel.parts[:-1]]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                out.add(".".join([*base, node.module] if node.module else base))
            else:
                out.add(node.module or "")
    return out


def files(names: list[str]) -> list[Path]:
    out = []
    for name in names:
        p = OPERATOR / name
        out += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return out


@pytest.mark.parametrize("path", files(PURE), ids=lambda p: str(p.relative_to(OPERATOR)))
def test_pure_modules_do_no_io(path):
    bad = {m for m in imports(path) for f in PURE_FORBIDDEN if m == f or m.startswith(f + ".")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", sorted(OPERATOR.rglob("*.py")), ids=lambda p: str(p.relative_to(OPERATOR)))
def test_the_operator_is_a_client_not_a_server(path):
    bad = {m for m in imports(path) for f in SERVERS if m == f or m.startswith(f + ".")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


def test_operator_is_a_namespace_package():
    assert not (OPERATOR / "__init__.py").exists(), "operator/__init__.py would shadow the stdlib's operator module"


def test_import_resolution_is_checked_on_a_real_module():
    assert "pyrocketmq.operator.model" in imports(OPERATOR / "render" / "broker.py")
    assert "kopf" in imports(OPERATOR / "handlers.py")
