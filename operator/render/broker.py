"""Broker → per group a ConfigMap (broker.conf), a headless Service, a StatefulSet and a
PodDisruptionBudget; per cluster a ServiceAccount and a Service.

Roles come from pod ordinals: the ConfigMap's broker.conf is the master's (``brokerId=0``, role
``ASYNC_MASTER``/``SYNC_MASTER``); the entrypoint (:mod:`pyrocketmq.operator.podconf`) turns it into a
slave's (``brokerId=<ordinal>``, ``SLAVE``) on ordinals > 0 and sets ``brokerIP1`` to the pod IP.

Updates roll slaves first and the master last: a StatefulSet's rolling update replaces pods from the
highest ordinal down and waits for each to be Ready, and ordinal 0 is the master. A change of
broker.conf changes the pod template (``pyrocketmq.io/config-hash``), so it rolls the same way.
Groups roll one after another: the reconciler sets each StatefulSet's ``partition``
(:func:`pyrocketmq.operator.plan.rollout_partitions`) from the live StatefulSets and their
``pyrocketmq.io/template-hash``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..auth_spec import auth_conf
from ..drain import ROLE_LABEL
from ..model import BrokerModel
from ..names import BROKER_FAST_PORT, BROKER_HA_PORT, BROKER_PORT, headless_service_name, master_service_name
from ..settings import RenderSettings
from .common import (
    ANNOTATION_CONFIG_HASH,
    ANNOTATION_TEMPLATE_HASH,
    CONFIG_MOUNT,
    RUN_MOUNT,
    STORE_MOUNT,
    TLS_MOUNT,
    acl_conf,
    claim_retention,
    claim_template,
    config_hash,
    metadata,
    pod_disruption_budget,
    selector_labels,
    service_account,
    template_hash,
    tls_conf,
)
from .pod import server_container, server_pod_template

COMPONENT = "broker"
CONF_KEY = "broker.conf"
STORE_VOLUME = "store"


def cluster_object_name(model: BrokerModel) -> str:
    """The cluster-wide Service and ServiceAccount."""
    return f"{model.ref.name}-broker"


def config_map_name(group: str) -> str:
    return f"{group}-config"


def broker_conf(model: BrokerModel, index: int, namesrv_addrs: Sequence[str]) -> str:
    """The master's broker.conf of group ``index`` (keys sorted after the operator's own)."""
    group = model.group_name(index)
    owned = {
        "brokerClusterName": model.cluster_name,
        "brokerName": group,
        "brokerId": "0",
        "brokerRole": model.master_role,
        "namesrvAddr": ";".join(namesrv_addrs),
        "listenPort": str(BROKER_PORT),
        "haListenPort": str(BROKER_HA_PORT),
        "storePathRootDir": f"{STORE_MOUNT}/store",
        "flushDiskType": model.flush_disk_type,
        # /metrics, /healthz and /readyz (0: not served; the probes then fall back to TCP).
        "metricsPort": str(model.metrics.port if model.metrics.enabled else 0),
        **({"grpcListenPort": str(model.grpc.port)} if model.grpc.enabled else {}),
        **(
            {"enableControllerMode": "true", "controllerAddr": ";".join(namesrv_addrs),
             "controllerHeartbeatIntervalMs": "500"}
            if model.failover
            else {}
        ),
        # the master registers the Service that follows it (a DNS name, resolved by the broker)
        **({"masterServiceAddr": f"{master_service_name(group)}.{model.ref.namespace}.svc:{BROKER_PORT}"}
           if model.master_service else {}),
        **security_conf(model),
    }
    lines = [
        f"# broker.conf of group {group} of Broker {model.ref.namespace}/{model.ref.name}, "
        "rendered by pyrocketmq-operator.",
        "# At start the entrypoint sets brokerIP1 to the pod IP and, on ordinals > 0, brokerId=<ordinal>",
        "# and brokerRole=SLAVE.",
    ] if not model.failover else [
        f"# broker.conf of group {group} of Broker {model.ref.namespace}/{model.ref.name}, "
        "rendered by pyrocketmq-operator.",
        "# Automatic failover: the controller elects the master. At start the entrypoint sets brokerIP1 to",
        "# the pod IP and brokerId=<ordinal + 1> (the replica's id; brokerRole is the master's mode).",
    ]
    lines += [f"{k}={v}" for k, v in owned.items()]
    if model.config:
        lines.append("# spec.config")
        lines += [f"{k}={_escape(v)}" for k, v in sorted(model.config.items())]
    return "\n".join(lines) + "\n"


def security_conf(model: BrokerModel) -> dict[str, str]:
    """broker.conf keys of spec.tls, spec.nameServer.tls, spec.acl and spec.auth."""
    conf = tls_conf(model.tls, users=model.auth.enabled)
    if model.namesrv_tls:
        conf["tls.enable"] = "true"
        if model.tls.enabled:  # the name servers' certificates are checked against the same ca.crt
            conf["tls.client.trustCertPath"] = f"{TLS_MOUNT}/ca.crt"
        else:
            conf["tls.client.authServer"] = "false"
    conf.update(acl_conf(model.acl))
    conf.update(auth_conf(model.auth))
    return conf


def _escape(value: str) -> str:
    """Keep a value on one properties line."""
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def render_broker(
    model: BrokerModel,
    namesrv_addrs: Sequence[str],
    settings: RenderSettings,
    groups: Iterable[int] | None = None,
) -> list[dict[str, Any]]:
    """Every object a Broker wants, in apply order.

    ``groups`` are the group indices to run: ``range(model.groups)`` by default; the reconciler adds
    the groups still draining after a scale-down so they are kept until they are empty.
    """
    indices = sorted(set(range(model.groups) if groups is None else groups))
    ref = model.ref
    objects: list[dict[str, Any]] = [
        service_account(ref, cluster_object_name(model), COMPONENT),
        _cluster_service(model),
    ]
    for index in indices:
        group = model.group_name(index)
        conf = broker_conf(model, index, namesrv_addrs)
        selector = selector_labels(ref, COMPONENT, group)
        objects += [
            _config_map(model, group, conf),
            _headless_service(model, group, selector),
            *([_master_service(model, group)] if model.master_service else []),
            _statefulset(model, settings, group, selector, conf),
            *_budgets(model, group, selector),
        ]
    return objects


def _budgets(model: BrokerModel, group: str, selector: dict[str, str]) -> list[dict[str, Any]]:
    """One pod of a group down at a time by a voluntary disruption. With failover, by role: the
    master's budget lets it go never (a drain waits until the operator hands mastership over, see
    operator/drain.py), the slaves' lets all but ``replicas - 2`` go (with the master up, one pod of
    2 or 3), and pods not yet labelled (no election yet) go one at a time. The eviction API refuses
    a pod that two budgets select, so the three selections are disjoint; and with ``maxUnavailable``
    over part of a StatefulSet the budget counts the StatefulSet's whole scale, so the role budgets
    use ``minAvailable``. The slaves' budget cannot see the master's pod: while a group is short of
    Ready pods (a master restarting, a slave elected but not yet relabelled) it lets no slave go."""
    ref = model.ref
    if not model.failover:
        return [pod_disruption_budget(ref, group, COMPONENT, selector, group=group)]
    unelected = [{"key": ROLE_LABEL, "operator": "NotIn", "values": ["master", "slave"]}]
    slaves_kept = model.replicas_per_group - (1 if group in model.short else 2)
    return [
        pod_disruption_budget(ref, group, COMPONENT, selector, group=group, expressions=unelected),
        pod_disruption_budget(
            ref,
            f"{group}-slaves",
            COMPONENT,
            {**selector, ROLE_LABEL: "slave"},
            group=group,
            budget={"minAvailable": max(0, slaves_kept)},
        ),
        pod_disruption_budget(
            ref,
            f"{group}-master",
            COMPONENT,
            {**selector, ROLE_LABEL: "master"},
            group=group,
            budget={"minAvailable": 1},
        ),
    ]


def _config_map(model: BrokerModel, group: str, conf: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(model.ref, config_map_name(group), COMPONENT, group=group),
        "data": {CONF_KEY: conf},
    }


def _service_ports(model: BrokerModel, ha: bool) -> list[dict[str, Any]]:
    ports = [
        {"name": "remoting", "port": BROKER_PORT, "targetPort": "remoting", "protocol": "TCP"},
        {"name": "fast", "port": BROKER_FAST_PORT, "targetPort": "fast", "protocol": "TCP"},
    ]
    if ha:
        ports.append({"name": "ha", "port": BROKER_HA_PORT, "targetPort": "ha", "protocol": "TCP"})
    if model.metrics.enabled:
        ports.append(
            {"name": "metrics", "port": model.metrics.port, "targetPort": "metrics", "protocol": "TCP"}
        )
    if model.grpc.enabled:
        ports.append({"name": "grpc", "port": model.grpc.port, "targetPort": "grpc", "protocol": "TCP"})
    return ports


def _headless_service(model: BrokerModel, group: str, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(model.ref, headless_service_name(group), COMPONENT, group=group),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": dict(selector),
            "ports": _service_ports(model, ha=True),
        },
    }


def _master_ports(model: BrokerModel) -> list[dict[str, Any]]:
    """What a client of the master uses: remoting, its fast port (a 4.x producer's VIP channel), gRPC."""
    return [p for p in _service_ports(model, ha=False) if p["name"] != "metrics"]


def _master_service(model: BrokerModel, group: str) -> dict[str, Any]:
    """spec.failover.masterService: a Service without a selector; the operator points its
    EndpointSlice (:func:`master_endpoints`) at the elected master as soon as the controller elects."""
    ports = [{k: v for k, v in p.items() if k != "targetPort"} for p in _master_ports(model)]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(model.ref, master_service_name(group), COMPONENT, group=group),
        "spec": {"type": "ClusterIP", "ports": ports},
    }


def master_endpoints(
    service: Mapping[str, Any], model: BrokerModel, group: str, master_addr: str, pod: str
) -> dict[str, Any]:
    """The EndpointSlice of ``group``'s master Service (``service`` as stored: it owns the slice):
    the replica at ``master_addr`` (its ``ip:port``: the elected master, or its likely successor, see
    ``master_follower.service_target``), or no endpoint when there is none."""
    meta = service["metadata"]
    ip = master_addr.rpartition(":")[0]
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": {**(meta.get("labels") or {}), "kubernetes.io/service-name": meta["name"],
                       "endpointslice.kubernetes.io/managed-by": "pyrocketmq-operator"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": meta["name"],
                                 "uid": meta["uid"], "controller": True}],
        },
        "addressType": "IPv4",
        "ports": [{"name": p["name"], "port": p["port"], "protocol": "TCP"} for p in _master_ports(model)],
        "endpoints": [{
            "addresses": [ip],
            "conditions": {"ready": True},
            "targetRef": {"kind": "Pod", "namespace": meta["namespace"], "name": pod},
        }] if ip else [],
    }


def _cluster_service(model: BrokerModel) -> dict[str, Any]:
    """A ClusterIP Service over every broker pod of the cluster: for metrics scraping and tools.
    (RocketMQ clients reach brokers by the addresses the name servers hand out, not through it.)"""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(model.ref, cluster_object_name(model), COMPONENT),
        "spec": {
            "type": "ClusterIP",
            "selector": selector_labels(model.ref, COMPONENT),
            "ports": _service_ports(model, ha=False),
        },
    }


def _broker_container(model: BrokerModel, settings: RenderSettings) -> dict[str, Any]:
    """The broker container: ports, environment, probes, mounts, resources."""
    container = server_container(
        model, settings, "broker", ["broker"],
        ports=[
            {"name": "remoting", "containerPort": BROKER_PORT, "protocol": "TCP"},
            {"name": "fast", "containerPort": BROKER_FAST_PORT, "protocol": "TCP"},
            {"name": "ha", "containerPort": BROKER_HA_PORT, "protocol": "TCP"},
        ],
        env=[
            {"name": "BROKER_CONF_TEMPLATE", "value": f"{CONFIG_MOUNT}/{CONF_KEY}"},
            {"name": "BROKER_CONF", "value": f"{RUN_MOUNT}/{CONF_KEY}"},
        ],
        mounts=[
            {"name": STORE_VOLUME, "mountPath": STORE_MOUNT},
            {"name": "config", "mountPath": CONFIG_MOUNT, "readOnly": True},
            {"name": "run", "mountPath": RUN_MOUNT},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    )
    if model.grpc.enabled:
        container["ports"].append({"name": "grpc", "containerPort": model.grpc.port, "protocol": "TCP"})
    if model.acl.enabled:  # the broker's own account, written into the pod's runtime conf, never a ConfigMap
        for var, key in (("PYROCKETMQ_ACCESS_KEY", "accessKey"), ("PYROCKETMQ_SECRET_KEY", "secretKey")):
            container["env"].append({"name": var, "valueFrom": {"secretKeyRef": {
                "name": model.acl.secret_name, "key": key, "optional": True}}})
    if model.auth.enabled:  # spec.auth's super user, likewise only in the pod's runtime conf
        for var, key in (("PYROCKETMQ_AUTH_USERNAME", "username"), ("PYROCKETMQ_AUTH_PASSWORD", "password")):
            container["env"].append({"name": var, "valueFrom": {"secretKeyRef": {
                "name": model.auth.secret_name, "key": key}}})
    # Recovery after an unclean stop scans the commitlog tail: give it up to 10 minutes (the
    # remoting port accepts only once the store is recovered).
    container["startupProbe"] = {"tcpSocket": {"port": "remoting"}, "periodSeconds": 10, "timeoutSeconds": 3,
                                 "failureThreshold": 60}
    return container


def _statefulset(
    model: BrokerModel, settings: RenderSettings, group: str, selector: dict[str, str], conf: str
) -> dict[str, Any]:
    volumes: list[dict[str, Any]] = [
        {"name": "config", "configMap": {"name": config_map_name(group)}},
        {"name": "run", "emptyDir": {}},
        {"name": "tmp", "emptyDir": {}},
    ]
    storage = model.storage
    claims: list[dict[str, Any]] = []
    if storage.persistent:
        claims.append(claim_template(STORE_VOLUME, storage, selector))
    else:
        volumes.insert(0, {"name": STORE_VOLUME, "emptyDir": {"sizeLimit": storage.size}})
    # Master and slaves of one group on different nodes (and zones): losing a node must not take a
    # whole group.
    template = server_pod_template(model, _broker_container(model, settings), volumes,
                                   service_account_name=cluster_object_name(model), grace_seconds=60,
                                   selector=selector, replicas=model.replicas_per_group,
                                   annotations={ANNOTATION_CONFIG_HASH: config_hash(conf)})
    spec: dict[str, Any] = {
        "serviceName": headless_service_name(group),
        "replicas": model.replicas_per_group,
        "podManagementPolicy": "Parallel",
        # Highest ordinal first, each Ready before the next: slaves first, the master (0) last.
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "selector": {"matchLabels": dict(selector)},
        "template": template,
    }
    if claims:
        spec["volumeClaimTemplates"] = claims
        spec["persistentVolumeClaimRetentionPolicy"] = claim_retention(storage)
    meta = metadata(model.ref, group, COMPONENT, group=group,
                    annotations={ANNOTATION_TEMPLATE_HASH: template_hash(spec["template"])})
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta, "spec": spec}
