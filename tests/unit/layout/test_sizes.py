"""Modules stay readable, in the product, the harness, the bench and the tests alike: none over 600
lines, no function over 80 lines (a longer one says why in a ``# long: <reason>`` comment on its
``def`` line)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCES = (
    "remoting",
    "server",
    "broker",
    "client",
    "namesrv",
    "operator",
    "spark",
    "localkube",
    "bench",
    "tests",
    "scripts",
    "pyrocketmq",
)
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def sources() -> list[Path]:
    out = []
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if (
                rel.parts[0] == "pyrocketmq"
                and len(rel.parts) > 2
                and (ROOT / "pyrocketmq" / rel.parts[1]).is_symlink()
            ):
                continue  # the linked folders are checked where they live
            out.append(path)
    return out


def test_no_module_is_over_600_lines():
    long = [
        f"{p.relative_to(ROOT)}: {n}"
        for p in sources()
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert not long, "split these modules:\n" + "\n".join(long)


def test_no_function_is_over_80_lines_without_a_reason():
    long = []
    for path in sources():
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = node.end_lineno - node.lineno + 1
                if size > MAX_FUNCTION_LINES and "# long:" not in lines[node.lineno - 1]:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {size} lines")
    assert not long, "split these functions (or say why on the def line with '# long:'):\n" + "\n".join(long)
