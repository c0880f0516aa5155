"""Which tests may share a pytest-xdist worker's time with others, and which must stay together.

The test command runs the suite in parallel workers (``-n`` with ``--dist loadgroup``): most tests
start their own processes on free ports and wait on sockets, so they overlap well on two cores.
Tests that share something only one of them may hold at a time, or whose session fixture is costly
to start once per worker, carry an ``xdist_group`` mark from the table below and so run one after
another on one worker. Without xdist the marks change nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

# path under tests/ (a folder or one file) -> group
GROUPS = {
    # the README's commands and the quickstart use the fixed default ports (9876, 10911) and .pyrocketmq/
    "integration/test_readme.py": "default-ports",
    "integration/test_quickstart.py": "default-ports",
    # one SparkSession (a JVM of about 1 GiB) for all of them
    "spark": "spark",
    # one control plane (etcd + kube-apiserver + controller manager) for all of them
    "k8s": "k8s",
    # the node cluster of scripts/k8s-up is one per machine
    "e2e": "e2e",
}


# session fixture -> group: a fixture that starts JVMs (Apache's name server and broker, about
# 0.7 GiB and a steady trickle of CPU) is started once, on one worker, not once per worker
FIXTURE_GROUPS = {"apache_cluster": "apache"}


def group_of(path: Path) -> str | None:
    try:
        rel = path.resolve().relative_to(HERE)
    except ValueError:
        return None
    parts = rel.parts
    for depth in range(len(parts), 0, -1):
        group = GROUPS.get("/".join(parts[:depth]))
        if group is not None:
            return group
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = group_of(Path(str(item.path)))
        for fixture in getattr(item, "fixturenames", ()):
            group = FIXTURE_GROUPS.get(fixture, group)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
