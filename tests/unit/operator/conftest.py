from __future__ import annotations

from typing import Any

import pytest

from pyrocketmq.operator.model import BrokerModel
from pyrocketmq.operator.settings import RenderSettings

SETTINGS = RenderSettings(default_image="registry.example/pyrocketmq:default")
"""The render settings of the renderer tests."""


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
    assert len(found) == 1, (
        f"{kind}/{name}: {len(found)} found among {[(o['kind'], o['metadata']['name']) for o in objects]}"
    )
    return found[0]


def broker(**spec: Any) -> BrokerModel:
    """The Broker ``orders`` of ``spec``, on the name servers ``names`` unless it names others."""
    spec.setdefault("nameServer", {"name": "names"})
    return BrokerModel.from_body(body("Broker", **spec))


def conf_dict(text: str) -> dict[str, str]:
    """A rendered ``.conf`` file's keys and values."""
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


@pytest.fixture
def make_body():
    return body
