"""The I/O half of :mod:`.nodeloss`: delete the claims and pods of replicas lost with their node,
and the pods left waiting for a claim that is gone; say so in Events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from .kubeapi import KubeClient
from .nodeloss import LostReplica, group_masters, lost_replicas, stuck_without_claim
from .status import Condition

EventFn = Any  # (type, reason, message) -> None


async def replace_lost(
    kube: KubeClient,
    event: EventFn,
    namespace: str,
    pods: Sequence[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
    master_of: Mapping[str, str] | None,
    group_label: str,
    replace_after: float,
) -> list[LostReplica]:
    """``master_of`` (group -> master pod) for broker groups; None where no pod is a master (name
    servers: the controller's state is on a majority of them)."""
    masters: Mapping[str, str]
    healthy: frozenset[str]
    if master_of is None:
        masters, healthy = {}, frozenset({""})
    else:
        masters, healthy = group_masters(pods, nodes, master_of, group_label)
    lost = lost_replicas(pods, nodes, datetime.now(UTC), replace_after, masters, healthy)
    for replica in lost:
        if not replica.replace:
            continue
        for claim in replica.claims:  # first: it goes as soon as the pod does
            await kube.delete("v1", "PersistentVolumeClaim", namespace, claim)
        await kube.delete("v1", "Pod", namespace, replica.pod, grace_period=0)
        event("Warning", "ReplicaReplaced",
              f"{replica.pod}: node {replica.node} not Ready for {replica.down_for:.0f} s; claims "
              f"{', '.join(replica.claims) or '(none)'} deleted and the pod {replica.reason}")  # fmt: skip
    if any((p.get("status") or {}).get("phase") == "Pending" for p in pods):  # only then can one be stuck
        claims = [
            str(c["metadata"]["name"]) for c in await kube.list("v1", "PersistentVolumeClaim", namespace)
        ]
        for pod in stuck_without_claim(pods, claims):
            await kube.delete("v1", "Pod", namespace, pod)
    return lost


def node_loss_condition(lost: Sequence[LostReplica]) -> Condition:
    if not lost:
        return Condition("NodeLoss", False, "AllNodesReady", "")
    replaced = [r.pod for r in lost if r.replace]
    waiting = [f"{r.pod} ({r.reason})" for r in lost if not r.replace]
    message = "; ".join(x for x in (f"replaced on healthy nodes: {', '.join(replaced)}" if replaced else "",
                                    f"waiting: {'; '.join(waiting)}" if waiting else "") if x)  # fmt: skip
    return Condition("NodeLoss", True, "ReplicasReplaced" if not waiting else "ReplicasWaiting", message)
