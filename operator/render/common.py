"""Pieces every rendered object shares: labels, metadata with an owner reference, pod settings.

Labels on everything the operator owns::

    app.kubernetes.io/name:       pyrocketmq
    app.kubernetes.io/instance:   <custom resource name>
    app.kubernetes.io/component:  namesrv | broker
    app.kubernetes.io/managed-by: pyrocketmq-operator
    pyrocketmq.io/group:          <brokerName>          (broker group objects only)

The apply step finds what it owns by the first four (and the owner reference's uid), so pruning
never touches objects of another resource or another tool.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..model import ObjectRef, Scheduling, Storage

MANAGED_BY = "pyrocketmq-operator"
LABEL_NAME = "app.kubernetes.io/name"
LABEL_INSTANCE = "app.kubernetes.io/instance"
LABEL_COMPONENT = "app.kubernetes.io/component"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_GROUP = "pyrocketmq.io/group"
LABEL_POD_INDEX = "apps.kubernetes.io/pod-index"  # set on StatefulSet pods by Kubernetes (>= 1.28)
ANNOTATION_CONFIG_HASH = "pyrocketmq.io/config-hash"
ANNOTATION_TEMPLATE_HASH = "pyrocketmq.io/template-hash"
ANNOTATION_SECRETS_HASH = "pyrocketmq.io/secrets-hash"
"""On a StatefulSet: digest of the pod template it was rendered with (tells a template change apart
without comparing against the API server's defaulted copy)."""

STORE_MOUNT = "/var/lib/pyrocketmq"
RUN_MOUNT = "/var/run/pyrocketmq"
CONFIG_MOUNT = "/etc/pyrocketmq"
TLS_MOUNT = "/etc/pyrocketmq-tls"
"""Where spec.tls's Secret is mounted (tls.crt, tls.key, ca.crt)."""
ACL_MOUNT = "/etc/pyrocketmq-acl"
"""Where spec.acl's Secret is mounted (plain_acl.yml; the file is re-read when the Secret changes)."""
RUN_AS = 10001


def owner_labels(ref: ObjectRef, component: str) -> dict[str, str]:
    """The labels that select everything rendered for ``ref`` (also the prune selector)."""
    return {
        LABEL_NAME: "pyrocketmq",
        LABEL_INSTANCE: ref.name,
        LABEL_COMPONENT: component,
        LABEL_MANAGED_BY: MANAGED_BY,
    }


def selector_labels(ref: ObjectRef, component: str, group: str | None = None) -> dict[str, str]:
    """Pod selector labels (immutable in a StatefulSet, so never anything that may change)."""
    labels = {LABEL_NAME: "pyrocketmq", LABEL_INSTANCE: ref.name, LABEL_COMPONENT: component}
    if group is not None:
        labels[LABEL_GROUP] = group
    return labels


def owner_reference(ref: ObjectRef) -> dict[str, Any]:
    return {
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "name": ref.name,
        "uid": ref.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def metadata(
    ref: ObjectRef,
    name: str,
    component: str,
    *,
    group: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    labels = owner_labels(ref, component)
    if group is not None:
        labels[LABEL_GROUP] = group
    meta: dict[str, Any] = {
        "name": name,
        "namespace": ref.namespace,
        "labels": labels,
        "ownerReferences": [owner_reference(ref)],
    }
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def config_hash(*parts: str) -> str:
    """A short digest of configuration text; put on pod templates so a change rolls the pods."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def template_hash(template: Mapping[str, Any]) -> str:
    """A digest of a rendered pod template (key order does not matter)."""
    return config_hash(json.dumps(template, sort_keys=True, separators=(",", ":")))


def pod_security_context() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS,
        "runAsGroup": RUN_AS,
        "fsGroup": RUN_AS,
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def container_security_context() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def pod_env() -> list[dict[str, Any]]:
    """The downward-API variables the entrypoint derives a pod's identity from."""
    return [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]


def apply_scheduling(
    pod_spec: dict[str, Any],
    scheduling: Scheduling,
    default_affinity: dict[str, Any],
    default_spread: list[dict[str, Any]] | None = None,
) -> None:
    """Put the scheduling overrides on ``pod_spec``: the given affinity and topology spread, else
    ``default_affinity`` and ``default_spread``."""
    pod_spec["affinity"] = dict(scheduling.affinity) if scheduling.affinity else default_affinity
    if scheduling.node_selector:
        pod_spec["nodeSelector"] = dict(scheduling.node_selector)
    if scheduling.tolerations:
        pod_spec["tolerations"] = [dict(t) for t in scheduling.tolerations]
    if scheduling.topology_spread_constraints:
        pod_spec["topologySpreadConstraints"] = [dict(t) for t in scheduling.topology_spread_constraints]
    elif default_spread:
        pod_spec["topologySpreadConstraints"] = default_spread
    if scheduling.priority_class_name:
        pod_spec["priorityClassName"] = scheduling.priority_class_name


HOST_KEY = "kubernetes.io/hostname"
ZONE_KEY = "topology.kubernetes.io/zone"


def one_per_node_required(replicas: int, nodes: int | None) -> bool:
    """Whether the pods of one set must (not only should) run on different nodes: when there are
    several and the cluster has a node for each. ``nodes`` counts every Node object, Ready or not,
    cordoned or not, so that losing or draining a node never rewrites the pods' template."""
    return replicas > 1 and nodes is not None and nodes >= replicas


def spread_affinity(labels: Mapping[str, str], required: bool, weight: int = 100) -> dict[str, Any]:
    """One pod matching ``labels`` per node: required, or preferred (so that a cluster with fewer
    nodes than pods still runs them all)."""
    term = {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": HOST_KEY}
    if required:
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "podAffinityTerm": term}]
        }
    }


def zone_spread(labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """Spread the pods matching ``labels`` evenly over zones where the nodes name one (a soft
    constraint: nodes without a zone label still take pods)."""
    return [
        {
            "maxSkew": 1,
            "topologyKey": ZONE_KEY,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": dict(labels)},
        }
    ]


def claim_template(name: str, storage: Storage, labels: Mapping[str, str]) -> dict[str, Any]:
    """A StatefulSet's claim template: one ReadWriteOnce volume of ``storage.size`` per pod."""
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": storage.size}},
    }
    if storage.storage_class_name:
        spec["storageClassName"] = storage.storage_class_name
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "labels": dict(labels)}, "spec": spec}  # fmt: skip


def claim_retention(storage: Storage) -> dict[str, str]:
    """Keep the claims when the set is deleted or scaled down, unless ``storage.delete_claim``."""
    retention = "Delete" if storage.delete_claim else "Retain"
    return {"whenDeleted": retention, "whenScaled": retention}


def service_account(ref: ObjectRef, name: str, component: str) -> dict[str, Any]:
    """A ServiceAccount of its own, without an API token: name servers and brokers never call the API."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": metadata(ref, name, component),
        "automountServiceAccountToken": False,
    }


def pod_disruption_budget(ref: ObjectRef, name: str, component: str, selector: Mapping[str, str],
                          group: str | None = None, *, budget: Mapping[str, int] | None = None,
                          expressions: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """How many pods of the selection a voluntary disruption (a drain, an upgrade) may take down:
    ``budget`` (default ``maxUnavailable: 1``); ``expressions`` narrow the selection further."""
    match: dict[str, Any] = {"matchLabels": dict(selector)}
    if expressions:
        match["matchExpressions"] = [dict(e) for e in expressions]
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata(ref, name, component, group=group),
        "spec": {**(budget or {"maxUnavailable": 1}), "selector": match},
    }


def metrics_annotations(enabled: bool, port: int) -> dict[str, str]:
    if not enabled:
        return {}
    return {"prometheus.io/scrape": "true", "prometheus.io/port": str(port), "prometheus.io/path": "/metrics"}


def health_probes(metrics_enabled: bool, tcp_port: str = "remoting") -> tuple[dict[str, Any], dict[str, Any]]:
    """``(readiness, liveness)`` probe actions: the metrics server's ``/readyz`` and ``/healthz`` when
    it runs (readiness then means "recovered and registered with a name server"), else a TCP
    connect to ``tcp_port``."""
    timing = {"periodSeconds": 10, "timeoutSeconds": 3}
    if not metrics_enabled:
        tcp = {"tcpSocket": {"port": tcp_port}, **timing}
        return dict(tcp), dict(tcp)
    return (
        {"httpGet": {"path": "/readyz", "port": "metrics"}, **timing},
        {"httpGet": {"path": "/healthz", "port": "metrics"}, **timing},
    )


def acl_conf(acl: Any) -> dict[str, str]:
    """The keys turning on the ACL of ``spec.acl`` (a model ``Acl``) with its mounted file."""
    return {"aclEnable": "true", "aclConfigFile": f"{ACL_MOUNT}/{ACL_FILE_KEY}"} if acl.enabled else {}


def tls_conf(tls: Any, users: bool = False) -> dict[str, str]:
    """The ``tls.server.*`` keys serving the certificate of ``spec.tls`` (a model ``Tls``). With
    ``users`` (ACL 2.0 on) and a managed certificate, client certificates of the clients' CA name
    users (TLS Users): asked for (optional unless ``clientAuth: require``), accepted from both CAs, a
    user named only by the clients' ones; peers trust the cluster CA alone."""
    if not tls.enabled:
        return {}
    conf = {"tls.server.mode": tls.mode, "tls.server.certPath": f"{TLS_MOUNT}/tls.crt",
            "tls.server.keyPath": f"{TLS_MOUNT}/tls.key", "tls.server.need.client.auth": tls.client_auth}
    if tls.managed and users:
        conf.update({"tls.server.need.client.auth": "require" if tls.client_auth == "require" else "optional",
                     "tls.server.trustCertPath": f"{TLS_MOUNT}/trust.crt",
                     "tls.client.trustCertPath": f"{TLS_MOUNT}/ca.crt",
                     "authenticationCertificateCaPath": f"{TLS_MOUNT}/clients-ca.crt"})  # fmt: skip
    elif tls.client_auth != "none":
        conf["tls.server.trustCertPath"] = f"{TLS_MOUNT}/ca.crt"
    return conf


def secret_volume(name: str, secret_name: str) -> dict[str, Any]:
    return {"name": name, "secret": {"secretName": secret_name, "defaultMode": 0o440}}


ACL_FILE_KEY = "plain_acl.yml"
"""The key of spec.acl's Secret the servers read (and re-read when it changes: no restart)."""


def secrets_hash(secrets: Mapping[str, Mapping[str, Any] | None], hot: frozenset[str] = frozenset()) -> str:
    """A short hash of Secrets' data by name (what a pod template carries to roll on a change);
    keys in ``hot`` are left out: the servers pick their changes up without a restart."""
    doc = {name: {k: v for k, v in ((body or {}).get("data") or {}).items() if k not in hot}
           for name, body in sorted(secrets.items())}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]
