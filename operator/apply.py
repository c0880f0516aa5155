"""The one apply step: make the cluster hold exactly the rendered objects of one custom resource.

Every desired object is server-side applied with the operator's field manager (``force``: the
operator owns these fields; a hand edit is drift and is reverted). Then every object of the managed
kinds that carries the resource's labels *and* its owner reference but was not rendered is deleted:
"no desired object" means delete. Deleting a StatefulSet leaves its claims to the StatefulSet's
retention policy (``spec.storage.deleteClaim``).

:func:`plan_prune` is the pure half (which existing objects go); :func:`apply_objects` does the I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .kube import KubeClient
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


def plan_prune(desired: Iterable[Mapping[str, Any]], existing: Iterable[Mapping[str, Any]], owner_uid: str) -> list[Key]:
    """Existing objects owned by ``owner_uid`` that are not desired, in :data:`MANAGED_KINDS` order.

    >>> sts = lambda n, uid="u": {"kind": "StatefulSet", "metadata": {"name": n, "ownerReferences": [{"uid": uid}]}}
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
        created, stored = await kube.apply(obj, field_manager)
        key = key_of(obj)
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
