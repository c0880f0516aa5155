"""The pod template of a name server or broker set: one server container of the project's image.

Both sets run the same way: the pod's identity from the downward API, the metrics port and its
probes, a read-only root as an unprivileged user without an API token, spec.tls's and spec.acl's
Secrets mounted read-only, spec.resources, and one pod per node spread over zones unless
spec.scheduling says otherwise. The renderers add what is their own (ports, mounts, volumes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model import BrokerModel, NameServerModel
from ..settings import RenderSettings
from .common import (
    ACL_MOUNT,
    ANNOTATION_SECRETS_HASH,
    RUN_MOUNT,
    TLS_MOUNT,
    apply_scheduling,
    container_security_context,
    health_probes,
    metrics_annotations,
    one_per_node_required,
    pod_env,
    pod_security_context,
    secret_volume,
    spread_affinity,
    zone_spread,
)

ServerModel = NameServerModel | BrokerModel
"""The custom resources that run server pods."""


def server_container(model: ServerModel, settings: RenderSettings, name: str, args: list[str], *,
                     ports: list[dict[str, Any]], env: list[dict[str, Any]],
                     mounts: list[dict[str, Any]]) -> dict[str, Any]:
    """The server container: ``ports`` then the metrics port; the pod's identity, ``HOME`` on the
    run volume, ``env``, then the metrics port's variable; ready once serving (with metrics:
    recovered and registered with a name server), alive while the event loop answers; ``mounts``
    then the Secrets'."""
    ports = list(ports)
    env = [*pod_env(), {"name": "HOME", "value": RUN_MOUNT}, *env]
    if model.metrics.enabled:
        ports.append({"name": "metrics", "containerPort": model.metrics.port, "protocol": "TCP"})
        env.append({"name": "PYROCKETMQ_METRICS_PORT", "value": str(model.metrics.port)})
    ready, alive = health_probes(model.metrics.enabled)
    container: dict[str, Any] = {
        "name": name,
        "image": model.image or settings.default_image,
        "imagePullPolicy": model.image_pull_policy or settings.image_pull_policy,
        "args": args,
        "ports": ports,
        "env": env,
        "readinessProbe": {**ready, "failureThreshold": 3},
        "livenessProbe": {**alive, "failureThreshold": 6},
        "securityContext": container_security_context(),
        "volumeMounts": [
            *mounts,
            *([{"name": "tls", "mountPath": TLS_MOUNT, "readOnly": True}] if model.tls.enabled else []),
            *([{"name": "acl", "mountPath": ACL_MOUNT, "readOnly": True}] if model.acl.enabled else []),
        ],
    }
    if model.resources:
        container["resources"] = {k: dict(v) for k, v in model.resources.items()}
    return container


def server_pod_template(
    model: ServerModel,
    container: dict[str, Any],
    volumes: list[dict[str, Any]],
    *,
    service_account_name: str,
    grace_seconds: int,
    selector: Mapping[str, str],
    replicas: int,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The pod template of a set of ``replicas`` pods that ``selector`` picks: ``container``;
    ``volumes`` then the Secrets'; the pods on different nodes (required when the cluster has a node
    for each) and spread over zones; ``annotations``, the metrics scrape's and the Secrets' hash (a
    change of the Secrets rolls the pods)."""
    pod_spec: dict[str, Any] = {
        "serviceAccountName": service_account_name,
        "automountServiceAccountToken": False,
        "terminationGracePeriodSeconds": grace_seconds,
        "securityContext": pod_security_context(),
        "containers": [container],
        "volumes": [
            *volumes,
            *([secret_volume("tls", model.tls.secret_name)] if model.tls.enabled else []),
            *([secret_volume("acl", model.acl.secret_name)] if model.acl.enabled else []),
        ],
    }
    required = one_per_node_required(replicas, model.nodes)
    apply_scheduling(pod_spec, model.scheduling, spread_affinity(selector, required), zone_spread(selector))
    pod_annotations = {
        **(annotations or {}),
        **metrics_annotations(model.metrics.enabled, model.metrics.port),
    }
    if model.secrets_hash:
        pod_annotations[ANNOTATION_SECRETS_HASH] = model.secrets_hash
    return {"metadata": {"labels": dict(selector), "annotations": pod_annotations}, "spec": pod_spec}
