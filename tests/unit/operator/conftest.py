from __future__ import annotations

from typing import Any

import pytest


def body(kind: str, name: str = "orders", namespace: str = "prod", **spec: Any) -> dict[str, Any]:
    """A custom resource body as the API server hands it to the operator (without defaults)."""
    return {
        "apiVersion": "pyrocketmq.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "generation": 3},
        "spec": spec,
    }


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def one(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found among {[(o['kind'], o['metadata']['name']) for o in objects]}"
    return found[0]


@pytest.fixture
def make_body():
    return body
