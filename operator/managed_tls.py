"""``spec.tls.managed``: the namespace's two CAs and the certificates they issue, kept in Secrets by
the operator (see :mod:`.certs` for the rules).

- ``pyrocketmq-cluster-ca`` issues the servers' certificates, ``pyrocketmq-clients-ca`` the client
  certificates of TLS Users (their common name is the user). Neither is owned: every managed resource
  of the namespace shares them. Keys: ``ca.crt`` (the current CA certificate), ``ca.key``,
  ``ca-bundle.crt`` (every CA certificate still valid: what to trust; a replaced key's leaves it at the
  end of the replacement, see :mod:`.ca_key`). Renewed, with its key,
  ``CA_RENEWAL_DAYS`` before it expires or when annotated ``pyrocketmq.io/force-renew: "true"``.
- ``<resource>-tls`` (owned by the NameServer or Broker, ``kubernetes.io/tls``): ``tls.crt``,
  ``tls.key``, ``ca.crt`` (the cluster bundle: what its clients and peers trust), ``clients-ca.crt``
  (the clients bundle: whose certificates name users) and ``trust.crt`` (both: what the server
  accepts client certificates from).
- A TLS User's Secret (owned by the User, ``kubernetes.io/tls``): ``tls.crt``, ``tls.key``, ``ca.crt``
  (the cluster bundle, to trust the servers) and ``username``.

A certificate is issued again when it is due, its names changed, its CA was renewed since (annotation
``pyrocketmq.io/ca-serial``), the bundles it carries changed, or it is annotated
``pyrocketmq.io/force-renew``. A new server certificate changes the Secret's hash on the pod
template, so the pods roll one at a time (a Broker's groups one after another) and pick it up. Writes
are optimistic (create, or replace at the version read): two reconcilers racing on a CA leave one CA,
the other retries.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import ca_key, certs
from .context import Context, ReconcileError
from .kubeapi import KubeError
from .model import BrokerModel, NameServerModel, ObjectRef
from .names import headless_service_name, master_service_name
from .render.common import (
    LABEL_COMPONENT,
    LABEL_MANAGED_BY,
    LABEL_NAME,
    MANAGED_BY,
    owner_labels,
    owner_reference,
)
from .tls_spec import Tls

CA_SECRET = "pyrocketmq-cluster-ca"
CLIENTS_CA_SECRET = "pyrocketmq-clients-ca"
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
    """The CAs and ``ref``'s server certificate as the rules say (a ReconcileError if it may not)."""
    with _secrets_allowed(ref.namespace):
        ca, clients = await _ensure_cas(ctx, ref.namespace)
        cluster_trust, clients_trust = _decoded(ca, "ca-bundle.crt"), _decoded(clients, "ca-bundle.crt")
        leaf = Leaf(ref, tls.secret_name, f"{ref.name}.{ref.namespace}", "tls",
                    certs.server_names(ref.namespace, ctx.settings.render.cluster_domain, services),
                    {"ca.crt": cluster_trust, "clients-ca.crt": clients_trust,
                     "trust.crt": cluster_trust + clients_trust})  # fmt: skip
        await _ensure_leaf(ctx, leaf, tls, ca, "server certificate", "the pods roll to pick it up")


async def ensure_client_certificate(ctx: Context, ref: ObjectRef, secret_name: str, username: str,
                                    tls: Tls) -> None:
    """A TLS User's certificate (common name ``username``) from the clients' CA, in ``secret_name``
    (validity and renewal as the cluster's ``tls``)."""
    with _secrets_allowed(ref.namespace):
        ca, clients = await _ensure_cas(ctx, ref.namespace)
        leaf = Leaf(ref, secret_name, username, "user", (),
                    {"ca.crt": _decoded(ca, "ca-bundle.crt"), "username": username})
        await _ensure_leaf(ctx, leaf, tls, clients, f"client certificate of user {username}",
                           "applications mounting it should restart to pick it up")


@contextlib.contextmanager
def _secrets_allowed(namespace: str) -> Iterator[None]:
    try:
        yield
    except KubeError as e:
        if e.status == 403:
            raise ReconcileError(
                "SecretForbidden",
                f"the operator may not create or update Secrets in {namespace}: {RBAC_HINT}",
            ) from None
        raise


async def _ensure_cas(ctx: Context, namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    cluster = await _ensure_ca(ctx, namespace, CA_SECRET, "cluster")
    return cluster, await _ensure_ca(ctx, namespace, CLIENTS_CA_SECRET, "clients")


async def _ensure_ca(ctx: Context, namespace: str, secret_name: str, kind: str) -> dict[str, Any]:
    kube, now = ctx.kube, _now()
    secret = await kube.get("v1", "Secret", namespace, secret_name)
    ca_name = f"pyrocketmq {kind} CA {namespace}"
    if secret is None:
        cert, key = certs.new_ca(ca_name, now, CA_VALIDITY_DAYS)
        body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": secret_name, "namespace": namespace,
                             "labels": {"app.kubernetes.io/managed-by": "pyrocketmq-operator"}},
                "data": _encoded({"ca.crt": cert, "ca.key": key, "ca-bundle.crt": cert})}  # fmt: skip
        created = await kube.create(body)
        if created is not None:
            ctx.event("Normal", "CACreated", f"{kind} CA created in Secret {secret_name}")
            return created
        secret = await kube.get("v1", "Secret", namespace, secret_name)  # another reconcile made it first
        if secret is None:
            raise ReconcileError("CAConflict", f"Secret {secret_name} was created and deleted meanwhile")
    cert, key = _decoded(secret, "ca.crt"), _decoded(secret, "ca.key")
    if not cert or not key:
        raise ReconcileError(
            "CAIncomplete",
            f"Secret {secret_name} lacks ca.crt or ca.key: delete it for a "
            "new CA (every managed certificate is then issued again)",
        )
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    if _decoded(secret, ca_key.NEXT_KEY):
        return await _maybe_promote(ctx, secret, kind)
    if annotations.get(ca_key.RETIRE_AFTER):
        return await _maybe_retire(ctx, secret, kind)
    if annotations.get(ca_key.REPLACE_KEY) == "true":
        return await _start_key_replacement(ctx, secret, kind, ca_name)
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
        raise ReconcileError("CAConflict", f"Secret {secret_name} changed while it was renewed; retrying")
    ctx.event(
        "Normal",
        "CARenewed",
        f"{kind} CA renewed (same key{', forced' if forced else ''}); "
        f"certificates issued by it are issued again",
    )
    return replaced


async def _replace_ca_secret(ctx: Context, secret: Mapping[str, Any], data: Mapping[str, str],
                             annotations: Mapping[str, str]) -> dict[str, Any]:
    """``secret`` with ``data`` and ``annotations`` (optimistic: a ReconcileError if it changed)."""
    meta = {**secret["metadata"], "annotations": dict(annotations)}
    replaced = await ctx.kube.replace({**secret, "metadata": meta, "data": _encoded(data)})
    if replaced is None:
        raise ReconcileError("CAConflict", f"Secret {meta['name']} changed meanwhile; retrying")
    return replaced


async def _start_key_replacement(ctx: Context, secret: Mapping[str, Any], kind: str,
                                 ca_name: str) -> dict[str, Any]:
    """Step 1 of :mod:`.ca_key`: a new key and CA certificate aside, trusted beside the old."""
    now = _now()
    cert, key = certs.new_ca(ca_name, now, CA_VALIDITY_DAYS)
    old = {k: _decoded(secret, k) for k in ("ca.crt", "ca.key", "ca-bundle.crt")}
    trust = certs.bundle([cert, old["ca-bundle.crt"] or old["ca.crt"]], now)
    annotations = dict((secret.get("metadata") or {}).get("annotations") or {})
    after = ca_key.rfc3339(now + ca_key.grace(annotations))
    annotations = {k: v for k, v in annotations.items() if k != ca_key.REPLACE_KEY}
    done = await _replace_ca_secret(ctx, secret, {**old, "ca-bundle.crt": trust, ca_key.NEXT_CERT: cert,
                                                  ca_key.NEXT_KEY: key},
                                    {**annotations, ca_key.PROMOTE_AFTER: after})  # fmt: skip
    ctx.event("Normal", "CAKeyReplacementStarted", f"{kind} CA: a new key, trusted beside the old one from "
              f"now on; it issues the certificates once every pod trusts it, not before {after}")  # fmt: skip
    return done


async def _mounted_certificates(ctx: Context, namespace: str,
                                pods: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The managed server certificate Secrets ``pods`` mount, by name (read one by one: the
    operator may get Secrets, not list them)."""
    names = {v["secret"]["secretName"] for p in pods for v in (p.get("spec") or {}).get("volumes") or ()
             if v.get("secret")}  # fmt: skip
    found = {}
    for name in sorted(names):
        secret = await ctx.kube.get("v1", "Secret", namespace, name)
        labels = ((secret or {}).get("metadata") or {}).get("labels") or {}
        ours = (labels.get(LABEL_MANAGED_BY), labels.get(LABEL_COMPONENT)) == (MANAGED_BY, "tls")
        if secret is not None and ours:
            found[name] = secret
    return found


async def _maybe_promote(ctx: Context, secret: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """Step 2 of :mod:`.ca_key`: the new key becomes the CA's once every pod trusts it."""
    kube, namespace, now = ctx.kube, secret["metadata"]["namespace"], _now()
    next_cert = _decoded(secret, ca_key.NEXT_CERT)
    pods = await kube.list("v1", "Pod", namespace, {LABEL_NAME: "pyrocketmq"})
    leaves = await _mounted_certificates(ctx, namespace, pods)
    trust_key = "ca.crt" if kind == "cluster" else "clients-ca.crt"
    carries = {n: next_cert.strip() in _decoded(s, trust_key) for n, s in leaves.items()}
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    waiting = ca_key.waiting_for(pods, leaves, carries, annotations.get(ca_key.PROMOTE_AFTER), now)
    if waiting is not None:
        ctx.log.info("%s CA key replacement: waiting for %s", kind, waiting)
        return dict(secret)
    data = {"ca.crt": next_cert, "ca.key": _decoded(secret, ca_key.NEXT_KEY),
            "ca-bundle.crt": certs.bundle([next_cert, _decoded(secret, "ca-bundle.crt")], now)}  # fmt: skip
    retire_after = ca_key.rfc3339(now + ca_key.grace(annotations))
    kept = {k: v for k, v in annotations.items() if k != ca_key.PROMOTE_AFTER}
    done = await _replace_ca_secret(ctx, secret, data, {**kept, ca_key.RETIRE_AFTER: retire_after})
    ctx.event("Normal", "CAKeyReplaced", f"{kind} CA: the new key issues the certificates from now on; "
              f"they are issued again and the pods roll; the old CA is trusted until they have, not "
              f"before {retire_after}")  # fmt: skip
    return done


async def _maybe_retire(ctx: Context, secret: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """Step 3 of :mod:`.ca_key`: the old CA leaves the bundle once every pod holds a certificate of
    the new key."""
    kube, namespace, now = ctx.kube, secret["metadata"]["namespace"], _now()
    ca_cert = _decoded(secret, "ca.crt")
    pods = await kube.list("v1", "Pod", namespace, {LABEL_NAME: "pyrocketmq"})
    leaves = await _mounted_certificates(ctx, namespace, pods)
    # the servers' certificates come from the cluster CA; the clients CA's are the Users' (not theirs)
    carries = {n: certs.signed_by(_decoded(s, "tls.crt"), ca_cert) for n, s in leaves.items()
               if kind == "cluster"}  # fmt: skip
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    waiting = ca_key.waiting_for(pods, leaves, carries, annotations.get(ca_key.RETIRE_AFTER), now,
                                 "to hold a certificate of the new key")  # fmt: skip
    if waiting is not None:
        ctx.log.info("%s CA: retiring the old key waits for %s", kind, waiting)
        return dict(secret)
    data = {k: _decoded(secret, k) for k in ("ca.crt", "ca.key")}
    data["ca-bundle.crt"] = certs.with_key_of(_decoded(secret, "ca-bundle.crt"), ca_cert)
    done = await _replace_ca_secret(ctx, secret, data, {k: v for k, v in annotations.items()
                                                        if k != ca_key.RETIRE_AFTER})  # fmt: skip
    ctx.event("Normal", "CAOldKeyRetired", f"{kind} CA: the old key's CA certificate is trusted no more; "
              "the pods roll with the new bundle")  # fmt: skip
    return done


@dataclass(frozen=True, slots=True)
class Leaf:
    """A certificate to keep in a Secret owned by ``owner``: its subject, DNS names and the other keys
    written beside ``tls.crt`` and ``tls.key`` (trust bundles)."""

    owner: ObjectRef
    secret_name: str
    common_name: str
    component: str
    dns_names: Sequence[str]
    data: Mapping[str, str]


def _reasons(
    found: Mapping[str, Any] | None, ca: Mapping[str, Any], tls: Tls, leaf: Leaf, now: datetime.datetime
) -> list[str]:
    if found is None:
        return ["new"]
    cert = _decoded(found, "tls.crt")
    if not cert or not _decoded(found, "tls.key"):
        return ["incomplete"]
    ca_cert = _decoded(ca, "ca.crt")
    held = certs.info(cert)
    annotations = (found.get("metadata") or {}).get("annotations") or {}
    checks = [
        ("forced", _forced(found)),
        ("due", certs.due(held, now, tls.renewal_days)),
        ("CA renewed", annotations.get(CA_SERIAL) != str(certs.info(ca_cert).serial)),
        ("other CA", not certs.signed_by(cert, ca_cert)),
        ("names changed", sorted(held.dns_names) != sorted(leaf.dns_names)),
        ("trust changed", any(_decoded(found, k) != v for k, v in leaf.data.items())),
    ]
    return [why for why, hit in checks if hit]


async def _ensure_leaf(
    ctx: Context, leaf: Leaf, tls: Tls, ca: Mapping[str, Any], what: str, then: str
) -> None:
    kube, now, namespace = ctx.kube, _now(), leaf.owner.namespace
    found = await kube.get("v1", "Secret", namespace, leaf.secret_name)
    if found is not None and found.get("type") != "kubernetes.io/tls":
        raise ReconcileError(
            "SecretNotTls",
            f"Secret {leaf.secret_name} is not a kubernetes.io/tls Secret: delete it (the operator "
            "creates it) or name another Secret",
        )
    reasons = _reasons(found, ca, tls, leaf, now)
    if not reasons:
        return
    ca_cert = _decoded(ca, "ca.crt")
    cert, key = certs.issue(
        ca_cert, _decoded(ca, "ca.key"), leaf.common_name, leaf.dns_names, now, tls.validity_days
    )
    meta: dict[str, Any] = {
        "name": leaf.secret_name,
        "namespace": namespace,
        "labels": owner_labels(leaf.owner, leaf.component),
        "annotations": {CA_SERIAL: str(certs.info(ca_cert).serial), ca_key.ISSUED_AT: ca_key.rfc3339(now)},
        "ownerReferences": [owner_reference(leaf.owner)],
    }
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": meta,
        "data": _encoded({"tls.crt": cert, "tls.key": key, **leaf.data}),
    }
    if found is None:
        done = await kube.create(body)
    else:
        meta["resourceVersion"] = (found.get("metadata") or {}).get("resourceVersion")
        done = await kube.replace(body)
    if done is None:
        raise ReconcileError("CertificateConflict", f"Secret {leaf.secret_name} changed meanwhile; retrying")
    ctx.event("Normal", "CertificateIssued",
              f"{what} in Secret {leaf.secret_name} issued ({', '.join(reasons)}); {then}")  # fmt: skip
