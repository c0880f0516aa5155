"""Replacing a managed CA's key without a failed connection (annotation ``pyrocketmq.io/replace-key:
"true"`` on the CA's Secret). Pure: the decisions; :mod:`.managed_tls` does the I/O.

1. **Trust.** A new key and CA certificate are made and kept aside (``next.crt``, ``next.key``); the
   bundle (``ca-bundle.crt``) trusts both from now on. Every certificate Secret carrying the bundle
   changes, so the servers' pods roll one at a time and trust both CAs; nothing is issued by the new
   key yet. Clients take the new bundle from their Secrets (``ca.crt``) meanwhile.
2. **Promote**, once every pod that mounts a managed certificate started after its Secret last
   changed and is Ready, every such Secret carries the new CA, and ``pyrocketmq.io/replace-key-grace-
   seconds`` (default :data:`DEFAULT_GRACE_SECONDS`) have passed: the new key becomes the CA's, every
   certificate is issued again by it and the pods roll once more.
3. **Retire**, once every pod that mounts a managed certificate started after it was issued by the new
   key and is Ready, and the grace period has passed again (clients holding certificates of the old
   key restart meanwhile): the old CA certificate leaves the bundle, so nothing it signed is trusted
   any more; the pods roll a last time with the bundle of the new key alone.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

from .status import pod_ready

REPLACE_KEY = "pyrocketmq.io/replace-key"
GRACE = "pyrocketmq.io/replace-key-grace-seconds"
PROMOTE_AFTER = "pyrocketmq.io/promote-after"
RETIRE_AFTER = "pyrocketmq.io/retire-old-ca-after"
ISSUED_AT = "pyrocketmq.io/issued-at"
"""On a certificate Secret: when the operator last wrote it (pods started before hold the old one)."""
NEXT_CERT, NEXT_KEY = "next.crt", "next.key"
DEFAULT_GRACE_SECONDS = 600
"""Time given to clients to take the new bundle before certificates come from the new key."""


def rfc3339(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(text: str | None) -> datetime.datetime | None:
    try:
        return datetime.datetime.strptime(text or "", "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return None


def grace(annotations: Mapping[str, str]) -> datetime.timedelta:
    raw = str(annotations.get(GRACE, "")).strip()
    seconds = int(raw) if raw.isdigit() else DEFAULT_GRACE_SECONDS
    return datetime.timedelta(seconds=seconds)


def _secret_volumes(pod: Mapping[str, Any]) -> set[str]:
    return {
        str((v.get("secret") or {}).get("secretName"))
        for v in (pod.get("spec") or {}).get("volumes") or ()
        if v.get("secret")
    }


def waiting_for(
    pods: Iterable[Mapping[str, Any]],
    leaves: Mapping[str, Mapping[str, Any]],
    carries_next: Mapping[str, bool],
    promote_after: str | None,
    now: datetime.datetime,
    lag: str = "to trust the new CA",
) -> str | None:
    """What the promotion (or the retirement) still waits for (None: go ahead now). ``leaves``: the
    managed certificate Secrets by name; ``carries_next``: whether each holds what the step needs
    already (trusts the new CA; for retiring, a certificate of the new key); ``pods``: the operator's
    pods of the namespace; ``promote_after``: the end of the grace period; ``lag``: what a Secret
    that does not hold it yet waits for."""
    after = _parse(promote_after)
    if after is not None and now < after:
        return f"the grace period, until {promote_after}"
    lagging = sorted(name for name, ok in carries_next.items() if not ok)
    if lagging:
        return f"Secrets {', '.join(lagging)} {lag}"
    for pod in pods:
        name = str((pod.get("metadata") or {}).get("name"))
        started = _parse((pod.get("metadata") or {}).get("creationTimestamp"))
        for secret in _secret_volumes(pod) & set(leaves):
            issued = _parse(((leaves[secret].get("metadata") or {}).get("annotations") or {}).get(ISSUED_AT))
            if issued is None or started is None or started < issued or not pod_ready(pod):
                return f"pod {name} to restart with Secret {secret} and be Ready"
    return None
