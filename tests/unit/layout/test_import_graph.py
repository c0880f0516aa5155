"""No import circle inside ``broker/``, ``client/`` or ``namesrv/``.

Every import counts, including those under ``if TYPE_CHECKING:`` and inside functions: a circle
that only type checkers see is still a circle a reader has to hold in their head, and the next
runtime import along it breaks the package. The graph is read from the source (``ast``), so the
test needs nothing installed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("broker", "client", "namesrv")


def module_name(path: Path, top: str) -> str:
    rel = path.relative_to(ROOT / top).with_suffix("")
    parts = [top, *rel.parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``path`` (module ``name``) imports, by any form of import."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in known:  # pyrocketmq.broker.store.x.Y → …store.x
            target = target.rpartition(".")[0]
        if target:
            found.add(target)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name.removeprefix("pyrocketmq."))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = (node.module or "").removeprefix("pyrocketmq.")
            for alias in node.names:  # "from . import x" names a module; "from .m import f" does not
                candidate = f"{origin}.{alias.name}"
                add(candidate if candidate in known else origin)
    found.discard(name)
    return found


def import_graph(top: str) -> dict[str, set[str]]:
    files = {module_name(p, top): p for p in sorted((ROOT / top).rglob("*.py"))}
    known = set(files)
    return {name: imports_of(path, name, known) for name, path in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_sees_a_circle_through_type_checking_imports(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    src = tmp_path / "m.py"
    src.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .app import Broker\n")
    assert imports_of(src, "broker.processors.m", {"broker.app"}) == set()  # ..app, not .app
    assert imports_of(src, "broker.m", {"broker.app"}) == {"broker.app"}


@pytest.mark.parametrize("top", PACKAGES)
def test_no_import_circle(top):
    graph = import_graph(top)
    assert len(graph) > 3
    found = cycles(graph)
    assert not found, "import circles (every import counts, TYPE_CHECKING ones too):\n" + "\n".join(
        " → ".join(c) for c in found
    )
