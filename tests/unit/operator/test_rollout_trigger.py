"""When a broker StatefulSet finishes rolling out, its Broker is reconciled at once (if it is rolling)."""

from __future__ import annotations

import asyncio
from typing import Any

from pyrocketmq.operator.handlers import Runtime, _rolling_broker
from pyrocketmq.operator.settings import OperatorSettings


class Brokers:
    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = {o["metadata"]["name"]: o for o in objects}

    async def get(self, api_version, kind, namespace, name):
        assert (api_version, kind, namespace) == ("pyrocketmq.io/v1alpha1", "Broker", "prod")
        return self.objects.get(name)


def broker(reason: str, status: str = "True", uid: str = "u1") -> dict[str, Any]:
    return {"metadata": {"name": "orders", "namespace": "prod", "uid": uid},
            "status": {"conditions": [{"type": "Reconciling", "status": status, "reason": reason}]}}


def sts(
    *, ready: int = 2, updated: int = 2, revisions: tuple[str, str] = ("r1", "r1"), owner: str = "u1"
) -> dict[str, Any]:
    return {
        "metadata": {"name": "orders-0", "namespace": "prod", "generation": 4,
                     "ownerReferences": [{"kind": "Broker", "name": "orders", "uid": owner}]},
        "spec": {"replicas": 2},
        "status": {"observedGeneration": 4, "readyReplicas": ready, "updatedReplicas": updated,
                   "currentRevision": revisions[0], "updateRevision": revisions[1]},
    }


def rolling_broker(kube: Brokers, obj: dict[str, Any], event: str = "MODIFIED") -> Any:
    runtime = Runtime(settings=OperatorSettings(), kube=kube)  # type: ignore[arg-type]
    return asyncio.run(_rolling_broker(runtime, obj, event))


def test_a_finished_group_of_a_rolling_broker_triggers_its_reconcile():
    kube = Brokers(broker("RollingUpdate"))
    assert rolling_broker(kube, sts()) is kube.objects["orders"]


def test_nothing_else_triggers_it():
    rolling = Brokers(broker("RollingUpdate"))
    assert rolling_broker(rolling, sts(ready=1)) is None  # a replica not Ready yet
    assert rolling_broker(rolling, sts(updated=1, revisions=("r0", "r1"))) is None  # still rolling
    assert rolling_broker(rolling, sts(), event="ADDED") is None  # the initial listing
    assert rolling_broker(rolling, sts(owner="u0")) is None  # a Broker of the same name, recreated
    assert rolling_broker(Brokers(broker("Reconciled", "False")), sts()) is None  # not rolling
    assert rolling_broker(Brokers(broker("ScalingDown")), sts()) is None
    assert rolling_broker(Brokers(), sts()) is None  # the Broker is gone
