"""The one apply step: make the cluster hold exactly the rendered objects of one custom resource.

Every desired object is server-side applied with the operator's field manager (``force``: the
operator owns these fields; a hand edit is drift and is reverted). Then every object of the managed
kinds that carries the resource's labels *and* its owner reference but was not rendered is deleted:
"no desired object" means delete. Deleting a StatefulSet leaves its claims to the StatefulSet's
retention policy (``spec.storage.deleteClaim``).

:func:`plan_prune` is the pure half (which existing objects go); :func:`apply_objects` does the I/O.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .kubeapi import KubeClient, KubeError
from .model import ObjectRef

log = logging.getLogger("pyrocketmq.operator")

# Kinds a renderer may produce, in the order stale objects are deleted (workloads first).
MANAGED_KINDS: tuple[tuple[str, str], ...] = (
    ("apps/v1", "StatefulSet"),
    ("policy/v1", "PodDisruptionBudget"),
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("v1", "ServiceAccount"),
)

Key = tuple[str, str]  # (kind, name)


def key_of(obj: Mapping[str, Any]) -> Key:
    return str(obj["kind"]), str(obj["metadata"]["name"])


def owned_by(obj: Mapping[str, Any], uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in (obj.get("metadata") or {}).get("ownerReferences") or ())


def plan_prune(
    desired: Iterable[Mapping[str, Any]], existing: Iterable[Mapping[str, Any]], owner_uid: str
) -> list[Key]:
    """Existing objects owned by ``owner_uid`` that are not desired, in :data:`MANAGED_KINDS` order.

    >>> sts = lambda n, uid="u": {"kind": "StatefulSet",
    ...                           "metadata": {"name": n, "ownerReferences": [{"uid": uid}]}}
    >>> plan_prune([sts("b-0")], [sts("b-0"), sts("b-1"), sts("x", uid="other")], "u")
    [('StatefulSet', 'b-1')]
    """
    wanted = {key_of(o) for o in desired}
    order = {kind: i for i, (_, kind) in enumerate(MANAGED_KINDS)}
    stale = [key_of(o) for o in existing if owned_by(o, owner_uid) and key_of(o) not in wanted]
    return sorted(set(stale), key=lambda k: (order.get(k[0], len(order)), k[1]))


@dataclass(slots=True)
class ApplyResult:
    created: list[Key] = field(default_factory=list)
    """Objects that did not exist (at first creation: everything; later: repaired drift)."""
    applied: list[Key] = field(default_factory=list)
    deleted: list[Key] = field(default_factory=list)
    stored: dict[Key, dict[str, Any]] = field(default_factory=dict)
    """The objects as the API server returned them after the apply."""
    recreated: list[Key] = field(default_factory=list)
    """StatefulSets deleted (their pods kept) and created again: a change they cannot take in place."""


IMMUTABLE_STATEFULSET = "updates to statefulset spec for fields other than"


async def _recreate_statefulset(
    kube: KubeClient, obj: Mapping[str, Any], field_manager: str
) -> dict[str, Any]:
    """Delete the StatefulSet leaving its pods (and claims) in place, and create it as ``obj``: the
    new one adopts the pods and replaces them one by one, as any template change does."""
    meta = obj["metadata"]
    await kube.delete(obj["apiVersion"], "StatefulSet", meta["namespace"], meta["name"], propagation="Orphan")
    for _ in range(120):
        if await kube.get(obj["apiVersion"], "StatefulSet", meta["namespace"], meta["name"]) is None:
            break
        await asyncio.sleep(0.5)
    _, stored = await kube.apply(obj, field_manager)
    return stored


async def apply_objects(
    kube: KubeClient,
    owner: ObjectRef,
    desired: Sequence[Mapping[str, Any]],
    selector: Mapping[str, str],
    field_manager: str,
) -> ApplyResult:
    """Apply ``desired``; delete the owner's objects (matching ``selector``) that are not in it."""
    result = ApplyResult()
    for obj in desired:
        key = key_of(obj)
        try:
            created, stored = await kube.apply(obj, field_manager)
        except KubeError as e:
            if not (obj["kind"] == "StatefulSet" and e.invalid and IMMUTABLE_STATEFULSET in e.message):
                raise
            log.info("%s/%s: StatefulSet %s cannot change in place (%s): recreating it, its pods kept",
                     owner.namespace, owner.name, obj["metadata"]["name"], e.message)
            created, stored = False, await _recreate_statefulset(kube, obj, field_manager)
            result.recreated.append(key)
        result.applied.append(key)
        result.stored[key] = stored
        if created:
            result.created.append(key)
    existing: list[dict[str, Any]] = []
    for api_version, kind in MANAGED_KINDS:
        existing += await kube.list(api_version, kind, owner.namespace, selector)
    versions = dict((kind, api_version) for api_version, kind in MANAGED_KINDS)
    for kind, name in plan_prune(desired, existing, owner.uid):
        if await kube.delete(versions[kind], kind, owner.namespace, name):
            log.info("%s/%s: deleted %s %s (no longer desired)", owner.namespace, owner.name, kind, name)
            result.deleted.append((kind, name))
    return result
