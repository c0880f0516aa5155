"""The reconcile chains against an in-memory API (no sockets): apply + prune, status, step errors.
The real API server is in tests/k8s; this keeps the chain's logic checkable without it."""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

import pytest

from pyrocketmq.operator.context import Context, ReconcileError
from pyrocketmq.operator.reconcile import reconcile
from pyrocketmq.operator.settings import OperatorSettings

from .conftest import body


class FakeKube:
    """Objects by (kind, namespace, name); apply creates or replaces, list filters by labels."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.statuses: dict[tuple[str, str, str], dict[str, Any]] = {}

    def add(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.objects[(obj["kind"], meta.get("namespace", "prod"), meta["name"])] = copy.deepcopy(obj)

    async def get(self, api_version, kind, namespace, name):
        obj = self.objects.get((kind, namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    async def list(self, api_version, kind, namespace, labels=None):
        out = []
        for (k, ns, _), obj in sorted(self.objects.items()):
            have = obj["metadata"].get("labels") or {}
            if k == kind and ns == namespace and all(have.get(a) == b for a, b in (labels or {}).items()):
                out.append(copy.deepcopy(obj))
        return out

    async def apply(self, obj, field_manager, force=True):
        key = (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
        created = key not in self.objects
        stored = copy.deepcopy(obj)
        if not created and "status" in self.objects[key]:  # the status is not the applier's to replace
            stored["status"] = self.objects[key]["status"]
            generation = self.objects[key]["metadata"].get("generation", 1)
            changed = stored.get("spec") != self.objects[key].get("spec")
            stored["metadata"]["generation"] = generation + 1 if changed else generation
        self.objects[key] = stored
        return created, copy.deepcopy(stored)

    async def create(self, obj):
        key = (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
        if key in self.objects:
            return None
        self.objects[key] = stored = copy.deepcopy(obj)
        stored["metadata"]["resourceVersion"] = "1"
        return copy.deepcopy(stored)

    async def replace(self, obj):
        key = (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
        version = (self.objects.get(key) or {}).get("metadata", {}).get("resourceVersion")
        if version is None or version != obj["metadata"].get("resourceVersion"):
            return None
        self.objects[key] = stored = copy.deepcopy(obj)
        stored["metadata"]["resourceVersion"] = str(int(version) + 1)
        return copy.deepcopy(stored)

    async def delete(self, api_version, kind, namespace, name, propagation="Background"):
        return self.objects.pop((kind, namespace, name), None) is not None

    async def patch_status(self, api_version, kind, namespace, name, status):
        self.statuses[(kind, namespace, name)] = copy.deepcopy(status)
        return {}


def run(kube: FakeKube, obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    events: list[tuple[str, str, str]] = []
    ctx = Context(kube=kube, settings=OperatorSettings(), event=lambda *e: events.append(e),  # type: ignore[arg-type]
                  log=logging.getLogger("test"))
    asyncio.run(reconcile(obj, ctx))
    return events


def kinds(kube: FakeKube) -> list[tuple[str, str]]:
    return sorted((k, n) for k, _, n in kube.objects if k not in ("NameServer", "Broker"))


def with_status(kube: FakeKube, obj: dict[str, Any]) -> dict[str, Any]:
    ref = (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
    return {**obj, "status": kube.statuses.get(ref, {})}


def test_broker_chain_applies_prunes_and_reports():
    kube = FakeKube()
    names = body("NameServer", name="names", replicas=3)
    kube.add(names)
    broker = body("Broker", groups=2, nameServer={"name": "names"})
    kube.add(broker)
    assert run(kube, broker) == []  # first creation: no repair events
    assert ("StatefulSet", "orders-1") in kinds(kube) and len(kinds(kube)) == 2 + 4 * 2
    status = kube.statuses[("Broker", "prod", "orders")]
    assert status["observedGeneration"] == 3 and status["clusterName"] == "orders"
    assert status["nameServers"] == [f"names-{i}.names-headless.prod.svc:9876" for i in range(3)]
    assert {c["type"]: c["reason"] for c in status["conditions"]}["Ready"] == "PodsNotReady"

    # Drift: a deleted StatefulSet comes back, with an Event.
    del kube.objects[("StatefulSet", "prod", "orders-0")]
    events = run(kube, with_status(kube, broker))
    assert ("StatefulSet", "orders-0") in kinds(kube)
    assert [e[1] for e in events] == ["Recreated"]

    # Scale down a group that never served: removed at once, with its ConfigMap, Service and PDB.
    smaller = copy.deepcopy(broker)
    smaller["spec"]["groups"] = 1
    events = run(kube, with_status(kube, smaller))
    assert not any(n.startswith("orders-1") for _, n in kinds(kube))
    assert "GroupRemoved" in [e[1] for e in events]


def test_objects_of_another_owner_are_never_pruned():
    kube = FakeKube()
    other = {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {
            "name": "orders-9-config",
            "namespace": "prod",
            "labels": {
                "app.kubernetes.io/name": "pyrocketmq",
                "app.kubernetes.io/instance": "orders",
                "app.kubernetes.io/component": "broker",
                "app.kubernetes.io/managed-by": "pyrocketmq-operator",
            },
            "ownerReferences": [{"uid": "someone-else"}],
        },
    }
    kube.add(other)
    broker = body("Broker", nameServer={"addresses": ["ns.example:9876"]})
    run(kube, broker)
    assert ("ConfigMap", "orders-9-config") in kinds(kube)


def test_missing_name_server_is_a_retryable_reason_of_its_step():
    kube = FakeKube()
    broker = body("Broker", nameServer={"name": "absent"})
    with pytest.raises(ReconcileError) as err:
        run(kube, broker)
    assert (err.value.reason, err.value.step, err.value.retry) == (
        "NameServerNotFound",
        "resolve_name_servers",
        True,
    )


def test_an_unusable_spec_is_not_retried():
    kube = FakeKube()
    with pytest.raises(ReconcileError) as err:
        run(kube, body("Broker", nameServer={"name": "n"}, replicasPerGroup=0))
    assert (err.value.reason, err.value.step, err.value.retry) == ("InvalidSpec", "load", False)


def test_topic_of_a_missing_cluster_waits():
    with pytest.raises(ReconcileError) as err:
        run(FakeKube(), body("Topic", clusterRef={"name": "nowhere"}))
    assert err.value.reason == "ClusterNotFound" and err.value.retry


def test_nameserver_chain_reports_addresses():
    kube = FakeKube()
    names = body("NameServer", name="names", replicas=2)
    run(kube, names)
    status = kube.statuses[("NameServer", "prod", "names")]
    assert (
        status["namesrvAddr"] == "names-0.names-headless.prod.svc:9876;names-1.names-headless.prod.svc:9876"
    )
    assert status["readyReplicas"] == 0 and status["replicas"] == 2


def _settle(kube: FakeKube, name: str, *, rolled: bool) -> None:
    """Play the StatefulSet controller: the status of a group that rolled out (or has not yet)."""
    sts = kube.objects[("StatefulSet", "prod", name)]
    replicas = sts["spec"]["replicas"]
    generation = sts["metadata"].setdefault("generation", 1)
    sts["status"] = {
        "observedGeneration": generation,
        "replicas": replicas,
        "readyReplicas": replicas if rolled else replicas - 1,
        "updatedReplicas": replicas if rolled else 0,
        "currentRevision": "r1" if rolled else "r0",
        "updateRevision": "r1",
    }


def partitions(kube: FakeKube) -> dict[str, int]:
    return {n: o["spec"]["updateStrategy"]["rollingUpdate"]["partition"]
            for (k, _, n), o in sorted(kube.objects.items()) if k == "StatefulSet"}


def test_a_template_change_rolls_one_group_after_another():
    kube = FakeKube()
    kube.add(body("NameServer", name="names", replicas=1))
    broker = body("Broker", groups=3, replicasPerGroup=2, nameServer={"name": "names"})
    run(kube, broker)
    assert partitions(kube) == {"orders-0": 0, "orders-1": 0, "orders-2": 0}  # created at once
    for g in range(3):
        _settle(kube, f"orders-{g}", rolled=True)

    changed = copy.deepcopy(broker)
    changed["spec"]["config"] = {"fileReservedTime": "48"}
    events = run(kube, with_status(kube, changed))
    assert partitions(kube) == {"orders-0": 0, "orders-1": 2, "orders-2": 2}
    assert [e[1:] for e in events if e[1] == "RollingGroup"] == [
        ("RollingGroup", "replacing the pods of orders-0; waiting: orders-1, orders-2")]
    status = kube.statuses[("Broker", "prod", "orders")]
    reconciling = {c["type"]: c for c in status["conditions"]}["Reconciling"]
    assert reconciling["reason"] == "RollingUpdate" and "orders-1, orders-2" in reconciling["message"]

    for g in range(3):  # orders-0 is rolling; the held groups have the new revision pending
        _settle(kube, f"orders-{g}", rolled=False)
    run(kube, with_status(kube, changed))
    assert partitions(kube) == {"orders-0": 0, "orders-1": 2, "orders-2": 2}

    _settle(kube, "orders-0", rolled=True)
    events = run(kube, with_status(kube, changed))
    assert partitions(kube) == {"orders-0": 0, "orders-1": 0, "orders-2": 2}
    assert [e[2] for e in events if e[1] == "RollingGroup"] == [
        "replacing the pods of orders-1; waiting: orders-2"
    ]

    _settle(kube, "orders-1", rolled=True)
    run(kube, with_status(kube, changed))
    assert partitions(kube) == {"orders-0": 0, "orders-1": 0, "orders-2": 0}
    _settle(kube, "orders-2", rolled=True)
    events = run(kube, with_status(kube, changed))
    assert partitions(kube) == {"orders-0": 0, "orders-1": 0, "orders-2": 0} and events == []
    status = kube.statuses[("Broker", "prod", "orders")]
    assert {c["type"]: c["reason"] for c in status["conditions"]}["Reconciling"] == "Reconciled"
