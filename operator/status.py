"""Status of the custom resources: conditions and what the operator observed. Pure.

Conditions follow the Kubernetes convention (``type``, ``status`` "True"/"False"/"Unknown",
``reason`` in CamelCase, ``message`` for people, ``lastTransitionTime`` that only moves when the
status flips, ``observedGeneration`` = the spec generation the condition is about):

============  ==================================================================================
type          meaning
============  ==================================================================================
Ready         the resource does what its spec says (pods ready; topic/group on every master)
Reconciling   the operator is still converging (a rollout, a scale-down, a retry after an error)
Degraded      it worked before and something is now wrong (a master that served is not ready)
ScaleDownPending  (Broker) a removed group is kept until drained; the reason says what it waits for
============  ==================================================================================
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .model import BrokerModel
from .names import BROKER_PORT


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: bool | None
    reason: str
    message: str = ""

    @property
    def status_text(self) -> str:
        return "Unknown" if self.status is None else ("True" if self.status else "False")


def now_ms() -> int:
    return int(time.time() * 1000)


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_conditions(
    previous: Iterable[Mapping[str, Any]] | None,
    new: Sequence[Condition],
    generation: int,
    now: str,
) -> list[dict[str, Any]]:
    """The condition list after ``new``: one entry per type; a type's ``lastTransitionTime`` is kept
    unless its status changed; previous types not in ``new`` are kept as they were."""
    old = {str(c.get("type")): dict(c) for c in previous or () if c.get("type")}
    out: dict[str, dict[str, Any]] = dict(old)
    for cond in new:
        before = old.get(cond.type)
        changed = before is None or before.get("status") != cond.status_text
        out[cond.type] = {
            "type": cond.type,
            "status": cond.status_text,
            "reason": cond.reason,
            "message": cond.message,
            "lastTransitionTime": now if changed else before.get("lastTransitionTime", now),  # type: ignore[union-attr]
            "observedGeneration": generation,
        }
    order = ["Ready", "Reconciling", "Degraded", "ScaleDownPending"]
    return sorted(
        out.values(), key=lambda c: (order.index(c["type"]) if c["type"] in order else len(order), c["type"])
    )


def condition_of(status: Mapping[str, Any] | None, type_: str) -> Mapping[str, Any] | None:
    c: Mapping[str, Any]
    for c in (status or {}).get("conditions") or ():
        if c.get("type") == type_:
            return c
    return None


def failure_conditions(reason: str, message: str, step: str | None = None) -> list[Condition]:
    """Ready=False and Reconciling=True (the operator retries) for a failed reconcile."""
    where = f" (step {step})" if step else ""
    return [
        Condition("Ready", False, reason, message),
        Condition("Reconciling", True, "Retrying", f"retrying after {reason}{where}"),
    ]


# -- observation of StatefulSets and pods -----------------------------------------------------------


def pod_ready(pod: Mapping[str, Any]) -> bool:
    c: Mapping[str, Any]
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def all_ready(sts: Mapping[str, Any]) -> bool:
    """Every replica the StatefulSet asks for is Ready."""
    replicas = int((sts.get("spec") or {}).get("replicas", 1))
    return int((sts.get("status") or {}).get("readyReplicas") or 0) >= replicas


def short_groups(statefulsets: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The groups (StatefulSets) with fewer Ready pods than replicas."""
    return frozenset(str(s["metadata"]["name"]) for s in statefulsets if not all_ready(s))


def statefulset_rolled_out(sts: Mapping[str, Any]) -> bool:
    """The controller has seen the latest spec and every replica runs the current revision."""
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    meta = sts.get("metadata") or {}
    replicas = int(spec.get("replicas", 1))
    return (
        int(status.get("observedGeneration") or 0) >= int(meta.get("generation") or 0)
        and int(status.get("updatedReplicas") or 0) == replicas
        and (status.get("currentRevision") == status.get("updateRevision"))
    )


def spread_condition(replicas: int, nodes: int | None, unit: str) -> Condition:
    """``Spread``: whether the ``replicas`` pods of each ``unit`` must run on different nodes."""
    if replicas <= 1:
        return Condition("Spread", True, "SingleReplica", f"one pod per {unit}: nothing to spread")
    if nodes is None:
        return Condition("Spread", False, "NodesUnknown", "the operator may not list nodes: the pods of a "
                         f"{unit} are only preferred on different nodes (grant it get/list on nodes)")
    if nodes < replicas:
        return Condition("Spread", False, "TooFewNodes", f"{replicas} pods per {unit} but {nodes} node(s): "
                         "different nodes are preferred, not required, until the cluster has a node for each")
    return Condition("Spread", True, "OnePerNode", f"{replicas} pods per {unit} on {nodes} nodes: each on a "
                     "different node (required), spread over zones")


def failover_condition(model: BrokerModel, controller: bool) -> Condition:
    """``Failover``: whether the controller elects each group's master, and if not, why."""
    if model.failover:
        return Condition(
            "Failover",
            True,
            "ControllerElects",
            "the name servers' controller elects each group's master among its in-sync replicas",
        )
    if model.failover_asked is False:
        return Condition("Failover", False, "Disabled", "spec.failover.enabled is false")
    if model.replicas_per_group < 2:
        return Condition("Failover", False, "SingleReplica", "one replica per group: no slave to elect")
    return Condition(
        "Failover",
        False,
        "NoController",
        "the name servers run no controller (a NameServer with "
        "2 replicas runs none: give it 3): a lost master's group serves reads only until it returns",
    )


def master_columns(groups: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """What ``kubectl get brokers`` shows of the active groups' masters, one string per column
    (a printer column shows one value, not a list): pods, nodes, zones, epochs; '-' where unknown."""
    active = [g for g in groups if g.get("phase") != "Draining"]

    def column(get: Any) -> str:
        return ",".join(str(get(g) or "-") for g in active)

    out = {
        "masters": column(lambda g: (g.get("master") or {}).get("pod")),
        "masterNodes": column(lambda g: (g.get("master") or {}).get("node")),
        "masterZones": column(lambda g: (g.get("master") or {}).get("zone")),
    }
    if any("epoch" in g for g in active):
        out["epochs"] = column(lambda g: g.get("epoch"))
    return out


def node_zones(nodes: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Node name -> its ``topology.kubernetes.io/zone`` label ('' without one)."""
    return {
        str((n.get("metadata") or {}).get("name")): str(((n.get("metadata") or {}).get("labels") or {})
                                                       .get("topology.kubernetes.io/zone", ""))
        for n in nodes
    }  # fmt: skip


def broker_group_status(
    model: BrokerModel,
    index: int,
    statefulset: Mapping[str, Any] | None,
    pods: Iterable[Mapping[str, Any]],
    previous: Mapping[str, Any] | None,
    draining: bool,
    controller: Mapping[str, Any] | None = None,
    zones: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One entry of ``status.groups``: master and slaves with address (pod IP and broker port, what
    the broker registers), readiness, and the node (and its zone, from ``zones``) each runs on.
    With automatic failover, ``controller`` is the controller's view of the group: the master is
    the pod it elected (replica id = ordinal + 1, none while it has none) and the entry carries the
    epoch and the in-sync pods."""
    name = model.group_name(index)
    replicas = int(((statefulset or {}).get("spec") or {}).get("replicas", model.replicas_per_group))
    by_ordinal: dict[int, Mapping[str, Any]] = {}
    for pod in pods:
        pod_name = str((pod.get("metadata") or {}).get("name") or "")
        head, _, tail = pod_name.rpartition("-")
        if head == name and tail.isdigit():
            by_ordinal[int(tail)] = pod

    def member(ordinal: int) -> dict[str, Any]:
        pod = by_ordinal.get(ordinal)
        ip = ((pod or {}).get("status") or {}).get("podIP")
        address = f"{ip}:{BROKER_PORT}" if ip else ""
        ready = pod_ready(pod) if pod is not None else False
        node = str(((pod or {}).get("spec") or {}).get("nodeName") or "")
        placed = {"node": node, "zone": (zones or {}).get(node, "")} if node else {}
        return {"pod": f"{name}-{ordinal}", "address": address, "ready": bool(ready), **placed}

    ready_replicas = int(((statefulset or {}).get("status") or {}).get("readyReplicas") or 0)
    extra: dict[str, Any] = {}
    if model.failover:
        elected = int((controller or {}).get("masterId", -1))
        master = member(elected - 1) if elected > 0 else {"pod": "", "address": "", "ready": False}
        slaves = [{**member(o), "brokerId": o + 1} for o in range(max(replicas, 1)) if o != elected - 1]
        if controller:
            extra = {"epoch": int(controller.get("epoch", 0)),
                     "inSync": [f"{name}-{int(r) - 1}" for r in controller.get("syncStateSet") or ()]}
        else:  # the controller did not answer: keep what was last known
            extra = {k: (previous or {})[k] for k in ("epoch", "inSync") if k in (previous or {})}
            master = (previous or {}).get("master") or master
    else:
        master = member(0)
        slaves = [{**member(o), "brokerId": o} for o in range(1, max(replicas, 1))]
    served = bool((previous or {}).get("servedTraffic")) or master["ready"]
    return {
        "name": name,
        "phase": "Draining" if draining else "Active",
        "replicas": replicas,
        "readyReplicas": ready_replicas,
        "servedTraffic": served,
        "master": master,
        "slaves": slaves,
        **extra,
    }


def broker_conditions(
    groups: Sequence[Mapping[str, Any]],
    desired_groups: int,
    rolled_out: bool,
    waiting: Sequence[tuple[str, str, str]],
    rollout_waiting: Sequence[str] = (),
) -> list[Condition]:
    """Conditions of a Broker from its group statuses.

    ``waiting`` lists ``(group, reason, message)`` for groups kept until drained; ``rollout_waiting``
    the groups whose pods wait for another group's rolling update to finish.
    """
    active = [g for g in groups if g.get("phase") != "Draining"]
    not_ready = [g for g in active if g.get("readyReplicas", 0) < g.get("replicas", 0)]
    missing = desired_groups - len(active)
    conds: list[Condition] = []
    if missing > 0:
        conds.append(
            Condition(
                "Ready", False, "GroupsMissing", f"{missing} of {desired_groups} groups not created yet"
            )
        )
    elif not_ready:
        detail = ", ".join(
            f"{g['name']} {g.get('readyReplicas', 0)}/{g.get('replicas', 0)}" for g in not_ready
        )
        conds.append(Condition("Ready", False, "PodsNotReady", f"pods ready: {detail}"))
    else:
        conds.append(Condition("Ready", True, "ClusterReady", f"{len(active)} groups, every pod ready"))
    if waiting:
        reason = waiting[0][1]
        message = "; ".join(f"{g}: {m}" for g, _, m in waiting)
        conds.append(Condition("ScaleDownPending", True, reason, message))
        conds.append(Condition("Reconciling", True, "ScalingDown", message))
    else:
        conds.append(Condition("ScaleDownPending", False, "NoScaleDown", ""))
        if not rolled_out:
            message = "StatefulSets are rolling out their pods, one group at a time"
            if rollout_waiting:
                message += "; waiting for their turn: " + ", ".join(rollout_waiting)
            conds.append(Condition("Reconciling", True, "RollingUpdate", message))
        else:
            conds.append(Condition("Reconciling", False, "Reconciled", "the cluster matches the spec"))
    degraded = [
        g["name"] for g in active if g.get("servedTraffic") and not (g.get("master") or {}).get("ready")
    ]
    if degraded:
        conds.append(
            Condition("Degraded", True, "MasterNotReady", "masters not ready: " + ", ".join(degraded))
        )
    else:
        conds.append(Condition("Degraded", False, "AsExpected", ""))
    return conds
