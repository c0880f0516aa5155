"""RocketMQ's reserved names and codes are written once, in ``remoting/``; everything else imports them."""

from __future__ import annotations

import ast
from pathlib import Path

from pyrocketmq.remoting import names

ROOT = Path(__file__).resolve().parents[3]
SOURCES = ("broker", "client", "namesrv", "operator", "spark", "pyrocketmq")
RESERVED = {
    v
    for k, v in vars(names).items()
    if k.isupper() and isinstance(v, str) and k.endswith(("_TOPIC", "_PREFIX", "_EVENT"))
}


def literals(path: Path) -> list[tuple[int, str]]:
    """String constants in code (docstrings are prose, not definitions) equal to a reserved name."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in RESERVED and id(node) not in docstrings
    ]


def test_the_reserved_names_are_known():
    assert {"%RETRY%", "%DLQ%", "TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC"} <= RESERVED


def test_no_module_spells_a_reserved_name_itself():
    found = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for top in SOURCES
        for path in sorted((ROOT / top).rglob("*.py"))
        for line, value in literals(path)
    ]
    assert not found, "import these from pyrocketmq.remoting.names:\n" + "\n".join(found)
