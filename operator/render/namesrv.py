"""NameServer → StatefulSet, headless Service, client Service, PodDisruptionBudget, ServiceAccount.

The headless Service publishes not-ready addresses so that every pod has its DNS name
(``<ns>-<i>.<ns>-headless.<namespace>.svc``) from the moment it exists: brokers are given those
names, never pod IPs, and re-resolve them when a name server pod comes back elsewhere.
"""

from __future__ import annotations

from typing import Any

from ..auth_spec import namesrv_auth
from ..model import NameServerModel
from ..names import NAMESRV_PORT, headless_service_name, namesrv_addresses, service_domain
from ..settings import RenderSettings
from .common import (
    RUN_MOUNT,
    acl_conf,
    claim_retention,
    claim_template,
    metadata,
    pod_disruption_budget,
    selector_labels,
    service_account,
    tls_conf,
)
from .pod import server_container, server_pod_template

COMPONENT = "namesrv"
CONTROLLER_VOLUME = "controller"
CONTROLLER_MOUNT = "/var/lib/pyrocketmq-controller"


def service_account_name(model: NameServerModel) -> str:
    return f"{model.ref.name}-namesrv"


def render_nameserver(model: NameServerModel, settings: RenderSettings) -> list[dict[str, Any]]:
    """Every object a NameServer wants, in apply order."""
    ref = model.ref
    selector = selector_labels(ref, COMPONENT)
    return [
        service_account(ref, service_account_name(model), COMPONENT),
        _headless_service(model, selector),
        _client_service(model, selector),
        _statefulset(model, settings, selector),
        pod_disruption_budget(ref, ref.name, COMPONENT, selector),
    ]


def controller_conf(model: NameServerModel, cluster_domain: str) -> dict[str, str]:
    """``spec.controller``: every pod runs a controller instance; its peers are the pods' stable DNS
    names, and each finds itself by its own (``$(POD_NAME)`` is expanded by the kubelet)."""
    if not model.controller:
        return {}
    ref = model.ref
    addrs = namesrv_addresses(ref.name, ref.namespace, model.replicas, cluster_domain)
    own = (
        f"$(POD_NAME).{headless_service_name(ref.name)}."
        f"{service_domain(ref.namespace, cluster_domain)}:{NAMESRV_PORT}"
    )
    return {
        "enableControllerInNamesrv": "true",
        "controllerPeers": ";".join(f"n{i}-{a}" for i, a in enumerate(addrs)),
        "controllerSelfId": own,
        "controllerStorePath": f"{CONTROLLER_MOUNT}/state.json",
    }


def _ports(model: NameServerModel) -> list[dict[str, Any]]:
    ports = [{"name": "remoting", "port": NAMESRV_PORT, "targetPort": "remoting", "protocol": "TCP"}]
    if model.metrics.enabled:
        ports.append(
            {"name": "metrics", "port": model.metrics.port, "targetPort": "metrics", "protocol": "TCP"}
        )
    return ports


def _headless_service(model: NameServerModel, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(model.ref, headless_service_name(model.ref.name), COMPONENT),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": dict(selector),
            "ports": _ports(model),
        },
    }


def _client_service(model: NameServerModel, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(model.ref, model.ref.name, COMPONENT),
        "spec": {"type": "ClusterIP", "selector": dict(selector), "ports": _ports(model)},
    }


def _statefulset(
    model: NameServerModel, settings: RenderSettings, selector: dict[str, str]
) -> dict[str, Any]:
    ref = model.ref
    auth, auth_env = namesrv_auth(model.auth, RUN_MOUNT)
    conf = {**tls_conf(model.tls, users=model.auth.enabled), **acl_conf(model.acl), **auth,
            **controller_conf(model, settings.cluster_domain)}
    args = ["namesrv", "--listen-port", str(NAMESRV_PORT), *(f"--set={k}={v}" for k, v in conf.items())]
    container = server_container(
        model, settings, "namesrv", args,
        ports=[{"name": "remoting", "containerPort": NAMESRV_PORT, "protocol": "TCP"}], env=auth_env,
        mounts=[{"name": "run", "mountPath": RUN_MOUNT}, {"name": "tmp", "mountPath": "/tmp"},
                *([{"name": CONTROLLER_VOLUME, "mountPath": CONTROLLER_MOUNT}] if model.controller else [])],
    )
    container["livenessProbe"]["initialDelaySeconds"] = 10
    storage = model.controller_storage
    volumes = [{"name": "run", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}]
    # Name servers (and the controller quorum they carry) on different nodes, spread over zones.
    template = server_pod_template(
        model,
        container,
        volumes,
        service_account_name=service_account_name(model),
        grace_seconds=30,
        selector=selector,
        replicas=model.replicas,
    )
    if model.controller and not storage.persistent:
        template["spec"]["volumes"].append(
            {"name": CONTROLLER_VOLUME, "emptyDir": {"sizeLimit": storage.size}}
        )
    claims = {}
    if model.controller and storage.persistent:  # the controller's state survives the pods
        claims = {"volumeClaimTemplates": [claim_template(CONTROLLER_VOLUME, storage, selector)],
                  "persistentVolumeClaimRetentionPolicy": claim_retention(storage)}  # fmt: skip
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata(ref, ref.name, COMPONENT),
        "spec": {
            **claims,
            "serviceName": headless_service_name(ref.name),
            "replicas": model.replicas,
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            "selector": {"matchLabels": dict(selector)},
            "template": template,
        },
    }
