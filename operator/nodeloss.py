"""Replacing what a lost node held. Pure.

A pod on a node that stopped reporting stays where it is: its claim is bound to that node's local
volume, and the pod object waits (Terminating, at best) for a kubelet that does not answer. After
``spec.nodeLoss.replaceAfter`` the operator gives up on the node for that pod: it deletes the pod's
claims and the pod, and the StatefulSet creates it again on a healthy node, with an empty volume
that it fills from its group's master. Never the master itself: a group whose master is on the lost
node waits until another replica is elected (automatic failover) and serves reads meanwhile.

=====================================================  ===========  ==============================
facts                                                  action       why
=====================================================  ===========  ==============================
the pod's node Ready                                   keep         nothing is lost
node not Ready for less than replaceAfter              keep         it may come back with its data
node not Ready for replaceAfter (or gone from the API)
  and the pod is its group's master                    wait         the only copy of the latest writes
  and the group has no Ready master elsewhere          wait         nothing to catch up from
  otherwise                                            replace      a replica catches up from the master
=====================================================  ===========  ==============================
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

DEFAULT_REPLACE_AFTER = "5m"
_DURATION = re.compile(r"(\d+)(h|m|s)")
_UNITS = {"h": 3600, "m": 60, "s": 1}


def parse_duration(text: str) -> float:
    """``1h30m``, ``5m``, ``45s`` -> seconds; ValueError otherwise."""
    parts = _DURATION.findall(text)
    if not text or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"{text!r} is not a duration such as 30s, 5m or 1h30m")
    return float(sum(int(n) * _UNITS[u] for n, u in parts))


def _time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def node_down_since(node: Mapping[str, Any] | None, epoch: datetime) -> datetime | None:
    """When ``node`` stopped being Ready (``epoch`` if it is gone from the API), None if Ready."""
    if node is None:
        return epoch
    for cond in (node.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            if cond.get("status") == "True":
                return None
            return _time(cond.get("lastTransitionTime")) or epoch
    return None  # no Ready condition yet: a node still registering


@dataclass(frozen=True, slots=True)
class LostReplica:
    pod: str
    node: str
    down_for: float  # seconds
    claims: tuple[str, ...]
    replace: bool
    reason: str  # why it is replaced, or why it waits


def _claims(pod: Mapping[str, Any]) -> tuple[str, ...]:
    volumes = (pod.get("spec") or {}).get("volumes") or ()
    return tuple(
        str(v["persistentVolumeClaim"]["claimName"]) for v in volumes if v.get("persistentVolumeClaim")
    )


def lost_replicas(
    pods: Iterable[Mapping[str, Any]],
    nodes: Iterable[Mapping[str, Any]],
    now: datetime,
    replace_after: float,
    masters: Mapping[str, str],
    healthy_masters: frozenset[str],
) -> list[LostReplica]:
    """The pods on nodes down for ``replace_after`` seconds or more, each with the decision.

    ``masters`` maps each pod name to its group's master pod ('' when it has none); a group is in
    ``healthy_masters`` (by master pod name) when that master is Ready on a Ready node."""
    by_name = {str((n.get("metadata") or {}).get("name")): n for n in nodes}
    epoch = datetime.fromtimestamp(0, now.tzinfo)
    out = []
    for pod in pods:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        node_name = str(spec.get("nodeName") or "")
        if not node_name:
            continue  # not scheduled: nothing is pinned anywhere
        since = node_down_since(by_name.get(node_name), epoch)
        if since is None:
            continue
        down_for = (now - since).total_seconds()
        if down_for < replace_after:
            continue
        name, master = str(meta.get("name")), masters.get(str(meta.get("name")), "")
        if name == master:
            replace, reason = False, "it is its group's master: waiting for another replica to be elected"
        elif master not in healthy_masters:
            replace, reason = False, "its group has no Ready master on a Ready node to catch up from"
        else:
            replace, reason = True, f"recreated on a healthy node, catching up from {master}"
        out.append(LostReplica(name, node_name, down_for, _claims(pod), replace, reason))
    return out


def master_pods(
    groups: Iterable[str], failover: bool, views: Mapping[str, Mapping[str, Any]]
) -> dict[str, str]:
    """Group -> its master pod: ordinal 0, or with failover the replica the controller elected
    (replica id = ordinal + 1; '' while it has none)."""
    out = {}
    for group in groups:
        elected = int((views.get(group) or {}).get("masterId", -1))
        out[group] = (f"{group}-{elected - 1}" if elected > 0 else "") if failover else f"{group}-0"
    return out


def group_masters(
    pods: Iterable[Mapping[str, Any]],
    nodes: Iterable[Mapping[str, Any]],
    master_of: Mapping[str, str],
    group_label: str,
) -> tuple[dict[str, str], frozenset[str]]:
    """``(pod -> its group's master pod, the masters that are Ready on a Ready node)`` from
    ``master_of`` (group -> master pod, '' while it has none) and the pods' group label."""
    pods = list(pods)
    ready_nodes = {str((n.get("metadata") or {}).get("name")) for n in nodes
                   if node_down_since(n, datetime.fromtimestamp(0)) is None}  # fmt: skip
    masters, healthy = {}, set()
    for pod in pods:
        meta = pod.get("metadata") or {}
        name, group = str(meta.get("name")), str((meta.get("labels") or {}).get(group_label, ""))
        masters[name] = master_of.get(group, "")
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (pod.get("status") or {}).get("conditions") or ())  # fmt: skip
        if name == masters[name] and ready and (pod.get("spec") or {}).get("nodeName") in ready_nodes:
            healthy.add(name)
    return masters, frozenset(healthy)


def stuck_without_claim(pods: Iterable[Mapping[str, Any]], claims: Iterable[str]) -> list[str]:
    """Pending pods naming a claim that no longer exists (deleted while the pod was recreated):
    deleting them lets the StatefulSet create pod and claim together."""
    have = set(claims)
    return [
        str((p.get("metadata") or {}).get("name"))
        for p in pods
        if (p.get("status") or {}).get("phase") == "Pending" and any(c not in have for c in _claims(p))
    ]
