"""``spec.tls.managed``: the namespace's cluster CA and each NameServer's or Broker's server
certificate, kept in Secrets by the operator (see :mod:`.certs` for the rules).

- ``pyrocketmq-cluster-ca`` (not owned: every managed resource of the namespace shares it): ``ca.crt``
  (the current CA certificate), ``ca.key``, ``ca-bundle.crt`` (every CA certificate still valid, the
  trust clients should use). Renewed, with its key, ``CA_RENEWAL_DAYS`` before it expires or when
  annotated ``pyrocketmq.io/force-renew: "true"``.
- ``<resource>-tls`` (owned by the resource, ``kubernetes.io/tls``): ``tls.crt``, ``tls.key`` and
  ``ca.crt`` (the bundle). Issued again when it is due, its names changed, the CA was renewed since
  (annotation ``pyrocketmq.io/ca-serial``), or it is annotated ``pyrocketmq.io/force-renew``.

A new certificate changes the Secret's hash on the pod template, so the pods roll one at a time (a
Broker's groups one after another) and pick it up. Writes are optimistic (create, or replace at the
version read): two reconcilers racing on the CA leave one CA, the other retries.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from . import certs
from .context import Context, ReconcileError
from .kubeapi import KubeError
from .model import BrokerModel, NameServerModel, ObjectRef
from .names import headless_service_name, master_service_name
from .render.common import owner_labels, owner_reference
from .tls_spec import Tls

CA_SECRET = "pyrocketmq-cluster-ca"
CA_VALIDITY_DAYS = 1825
CA_RENEWAL_DAYS = 60
FORCE_RENEW = "pyrocketmq.io/force-renew"
CA_SERIAL = "pyrocketmq.io/ca-serial"
RBAC_HINT = "install the chart with rbac.manageSecrets=true (spec.tls.managed needs it)"


def _decoded(secret: Mapping[str, Any] | None, key: str) -> str:
    raw = ((secret or {}).get("data") or {}).get(key)
    return base64.b64decode(raw).decode() if raw else ""


def _encoded(data: Mapping[str, str]) -> dict[str, str]:
    return {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}


def _forced(secret: Mapping[str, Any]) -> bool:
    return ((secret.get("metadata") or {}).get("annotations") or {}).get(FORCE_RENEW) == "true"


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


async def ensure_managed(ctx: Context, model: NameServerModel | BrokerModel) -> None:
    """With spec.tls.managed: the CA and the resource's certificate for the names of its Services."""
    if not model.tls.managed:
        return
    if isinstance(model, BrokerModel):
        services = [n for g in model.group_names for n in (headless_service_name(g), master_service_name(g))]
    else:
        services = [headless_service_name(model.ref.name), model.ref.name]
    await ensure_certificates(ctx, model.ref, model.tls, services)


async def ensure_certificates(ctx: Context, ref: ObjectRef, tls: Tls, services: Sequence[str]) -> None:
    """The CA and ``ref``'s server certificate as the rules say (a ReconcileError if it may not)."""
    try:
        ca = await _ensure_ca(ctx, ref.namespace)
        names = certs.server_names(ref.namespace, ctx.settings.render.cluster_domain, services)
        await _ensure_server(ctx, ref, tls, ca, names)
    except KubeError as e:
        if e.status == 403:
            raise ReconcileError(
                "SecretForbidden",
                f"the operator may not create or update Secrets in {ref.namespace}: {RBAC_HINT}",
            ) from None
        raise


async def _ensure_ca(ctx: Context, namespace: str) -> dict[str, Any]:
    kube, now = ctx.kube, _now()
    secret = await kube.get("v1", "Secret", namespace, CA_SECRET)
    ca_name = f"pyrocketmq cluster CA {namespace}"
    if secret is None:
        cert, key = certs.new_ca(ca_name, now, CA_VALIDITY_DAYS)
        body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": CA_SECRET, "namespace": namespace,
                             "labels": {"app.kubernetes.io/managed-by": "pyrocketmq-operator"}},
                "data": _encoded({"ca.crt": cert, "ca.key": key, "ca-bundle.crt": cert})}  # fmt: skip
        created = await kube.create(body)
        if created is not None:
            ctx.event("Normal", "CACreated", f"cluster CA created in Secret {CA_SECRET}")
            return created
        secret = await kube.get("v1", "Secret", namespace, CA_SECRET)  # another reconcile made it first
        if secret is None:
            raise ReconcileError("CAConflict", f"Secret {CA_SECRET} was created and deleted meanwhile")
    cert, key = _decoded(secret, "ca.crt"), _decoded(secret, "ca.key")
    if not cert or not key:
        raise ReconcileError(
            "CAIncomplete",
            f"Secret {CA_SECRET} lacks ca.crt or ca.key: delete it for a "
            "new CA (every managed certificate is then issued again)",
        )
    forced = _forced(secret)
    if not forced and not certs.due(certs.info(cert), now, CA_RENEWAL_DAYS):
        return secret
    renewed, _ = certs.new_ca(ca_name, now, CA_VALIDITY_DAYS, key)
    trust = certs.bundle([renewed, _decoded(secret, "ca-bundle.crt") or cert], now)
    meta = dict(secret["metadata"])
    meta["annotations"] = {k: v for k, v in (meta.get("annotations") or {}).items() if k != FORCE_RENEW}
    replaced = await kube.replace(
        {
            **secret,
            "metadata": meta,
            "data": _encoded({"ca.crt": renewed, "ca.key": key, "ca-bundle.crt": trust}),
        }
    )
    if replaced is None:
        raise ReconcileError("CAConflict", f"Secret {CA_SECRET} changed while it was renewed; retrying")
    ctx.event(
        "Normal",
        "CARenewed",
        f"cluster CA renewed (same key{', forced' if forced else ''}); "
        f"certificates issued by it are issued again",
    )
    return replaced


def _reasons(
    leaf: Mapping[str, Any] | None,
    ca: Mapping[str, Any],
    tls: Tls,
    names: Sequence[str],
    now: datetime.datetime,
) -> list[str]:
    if leaf is None:
        return ["new"]
    cert = _decoded(leaf, "tls.crt")
    if not cert or not _decoded(leaf, "tls.key"):
        return ["incomplete"]
    ca_cert = _decoded(ca, "ca.crt")
    found = certs.info(cert)
    annotations = (leaf.get("metadata") or {}).get("annotations") or {}
    checks = [
        ("forced", _forced(leaf)),
        ("due", certs.due(found, now, tls.renewal_days)),
        ("CA renewed", annotations.get(CA_SERIAL) != str(certs.info(ca_cert).serial)),
        ("other CA", not certs.signed_by(cert, ca_cert)),
        ("names changed", sorted(found.dns_names) != sorted(names)),
        ("trust changed", _decoded(leaf, "ca.crt") != _decoded(ca, "ca-bundle.crt")),
    ]
    return [why for why, hit in checks if hit]


async def _ensure_server(
    ctx: Context, ref: ObjectRef, tls: Tls, ca: Mapping[str, Any], names: Sequence[str]
) -> None:
    kube, now = ctx.kube, _now()
    leaf = await kube.get("v1", "Secret", ref.namespace, tls.secret_name)
    reasons = _reasons(leaf, ca, tls, names, now)
    if not reasons:
        return
    ca_cert = _decoded(ca, "ca.crt")
    cert, key = certs.issue(
        ca_cert, _decoded(ca, "ca.key"), f"{ref.name}.{ref.namespace}", names, now, tls.validity_days
    )
    meta: dict[str, Any] = {
        "name": tls.secret_name,
        "namespace": ref.namespace,
        "labels": owner_labels(ref, "tls"),
        "annotations": {CA_SERIAL: str(certs.info(ca_cert).serial)},
        "ownerReferences": [owner_reference(ref)],
    }
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": meta,
        "data": _encoded({"tls.crt": cert, "tls.key": key, "ca.crt": _decoded(ca, "ca-bundle.crt")}),
    }
    if leaf is None:
        done = await kube.create(body)
    else:
        meta["resourceVersion"] = (leaf.get("metadata") or {}).get("resourceVersion")
        done = await kube.replace(body)
    if done is None:
        raise ReconcileError("CertificateConflict", f"Secret {tls.secret_name} changed meanwhile; retrying")
    ctx.event(
        "Normal",
        "CertificateIssued",
        f"server certificate in Secret {tls.secret_name} issued "
        f"({', '.join(reasons)}); the pods roll to pick it up",
    )
