"""Draining a node that holds a master, without a failed send. Pure.

With automatic failover every broker pod carries ``pyrocketmq.io/role`` (``master`` or ``slave``, as
the controller elected), and each group's PodDisruptionBudgets go by role (see
``render.broker._budgets``): the master's lets no eviction through, so ``kubectl drain`` cannot
evict a master. When the operator sees a master on a cordoned node it asks the controller to move
mastership to an in-sync replica that is Ready on a schedulable node; once the name servers route
the new master (so that a client whose send to the old one fails finds the new one when it asks
again) it relabels the pods, and the drain, retrying, evicts the old master as the slave it now is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

ROLE_LABEL = "pyrocketmq.io/role"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def cordoned(node: Mapping[str, Any]) -> bool:
    spec = node.get("spec") or {}
    return bool(spec.get("unschedulable")) or any(
        t.get("key") == UNSCHEDULABLE_TAINT for t in spec.get("taints") or ()
    )


def _ready(obj: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or ())  # fmt: skip


def in_sync_pods(group: str, view: Mapping[str, Any]) -> list[str]:
    """The pods of the controller's in-sync set (replica id = ordinal + 1)."""
    return [f"{group}-{int(r) - 1}" for r in view.get("syncStateSet") or ()]


def drain_moves(
    master_of: Mapping[str, str],
    views: Mapping[str, Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    nodes: Iterable[Mapping[str, Any]],
) -> dict[str, str]:
    """Group -> the pod to make master, for each group whose master is on a cordoned node and
    that has an in-sync replica Ready on a schedulable, Ready node."""
    by_node = {str((n.get("metadata") or {}).get("name")): n for n in nodes}
    by_pod = {str((p.get("metadata") or {}).get("name")): p for p in pods}

    def node_of(pod: str) -> Mapping[str, Any] | None:
        return by_node.get(str(((by_pod.get(pod) or {}).get("spec") or {}).get("nodeName") or ""))

    moves = {}
    for group, master in master_of.items():
        node = node_of(master) if master else None
        if node is None or not cordoned(node):
            continue
        for pod in in_sync_pods(group, views.get(group) or {}):
            target = node_of(pod)
            if pod != master and target is not None and not cordoned(target) and _ready(target) \
                    and _ready(by_pod.get(pod) or {}):  # fmt: skip
                moves[group] = pod
                break
    return moves


def role_labels(
    master_of: Mapping[str, str], pods: Iterable[Mapping[str, Any]], group_label: str
) -> dict[str, str]:
    """Pod -> the role label it should carry, for the pods whose label differs."""
    out = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        group = labels.get(group_label)
        if group is None or group not in master_of:
            continue
        want = "master" if master_of[group] and meta.get("name") == master_of[group] else "slave"
        if labels.get(ROLE_LABEL) != want:
            out[str(meta.get("name"))] = want
    return out


def handovers(master_of: Mapping[str, str], pods: Iterable[Mapping[str, Any]], group_label: str) -> set[str]:
    """The groups whose ``master`` role label is on a pod other than the elected master (a
    handover the labels have not followed yet)."""
    out = set()
    for pod in pods:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        group = str(labels.get(group_label, ""))
        if group in master_of and labels.get(ROLE_LABEL) == "master" and meta.get("name") != master_of[group]:
            out.add(group)
    return out


def routed(
    groups: Iterable[str],
    master_of: Mapping[str, str],
    registered: Mapping[str, Mapping[int, str]],
    pods: Iterable[Mapping[str, Any]],
    port: int,
) -> set[str]:
    """Of ``groups``, those whose elected master the name servers route as the group's master
    (``registered``: group -> {brokerId: address}; id 0 at the master pod's IP and ``port``)."""
    ips = {str((p.get("metadata") or {}).get("name")): (p.get("status") or {}).get("podIP") for p in pods}
    out = set()
    for group in groups:
        ip = ips.get(master_of.get(group, ""))
        if ip and (registered.get(group) or {}).get(0) == f"{ip}:{port}":
            out.add(group)
    return out
