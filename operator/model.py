"""Typed views of the four custom resources, parsed from their bodies with the CRDs' defaults.

The API server applies the CRD defaults before the operator sees an object; the same defaults are
repeated here so that renderers and decisions also work on hand-written dicts (unit tests) and keep
working when a default is added to a CRD later. Pure: no I/O, no kopf.

Names and ports derived from a resource are in :mod:`.names`.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pyrocketmq.remoting.names import is_legal_name

from .auth_spec import AUTH_CONFIG_KEYS, Auth
from .autoscale import Autoscale
from .names import broker_group_name
from .nodeloss import parse_duration
from .tls_spec import Tls

API_GROUP = "pyrocketmq.io"
API_VERSION = "v1alpha1"
GROUP_VERSION = f"{API_GROUP}/{API_VERSION}"

# Annotations the operator reads on a Broker.
ANNOTATION_FORCE_SCALE_DOWN = "pyrocketmq.io/force-scale-down"
"""``"true"`` removes groups being scaled down without waiting for them to drain (data may be lost)."""

RESERVED_CONFIG_KEYS = frozenset(
    {
        "brokerClusterName",
        "brokerName",
        "brokerId",
        "brokerRole",
        "namesrvAddr",
        "brokerIP1",
        "listenPort",
        "haListenPort",
        "storePathRootDir",
        "flushDiskType",
        "metricsPort",
        "grpcListenPort",
        "aclEnable",
        "aclConfigFile",
        "accessKey",
        "secretKey",
        "tls.enable",
        "tls.server.mode",
        "tls.server.certPath",
        "tls.server.keyPath",
        "tls.server.keyPassword",
        "tls.server.need.client.auth",
        "tls.server.trustCertPath",
        "tls.client.authServer",
        "tls.client.trustCertPath",
    }
) | AUTH_CONFIG_KEYS
"""broker.conf keys the operator sets (from the spec's own fields: spec.tls, spec.acl, …)."""

T = TypeVar("T")
_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class SpecError(ValueError):
    """A resource's spec cannot be used (the CRD's validation normally refuses it first)."""


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """The identity of a custom resource: enough for owner references, events and labels."""

    kind: str
    name: str
    namespace: str
    uid: str = ""
    generation: int = 0
    api_version: str = GROUP_VERSION

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> ObjectRef:
        meta = body.get("metadata") or {}
        return cls(
            kind=str(body.get("kind") or ""),
            name=str(meta.get("name") or ""),
            namespace=str(meta.get("namespace") or "default"),
            uid=str(meta.get("uid") or ""),
            generation=int(meta.get("generation") or 0),
            api_version=str(body.get("apiVersion") or GROUP_VERSION),
        )


@dataclass(frozen=True, slots=True)
class Metrics:
    enabled: bool = True
    """Expose Prometheus metrics over HTTP."""
    port: int = 5557
    """The metrics port in the pod."""

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> Metrics:
        spec = spec or {}
        return cls(enabled=bool(spec.get("enabled", True)), port=int(spec.get("port", 5557)))


@dataclass(frozen=True, slots=True)
class Grpc:
    """``spec.grpc``: the RocketMQ 5 gRPC endpoint the official 5.x clients use."""

    enabled: bool = True
    port: int = 8081

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> Grpc:
        spec = spec or {}
        return cls(enabled=bool(spec.get("enabled", True)), port=int(spec.get("port", 8081)))


@dataclass(frozen=True, slots=True)
class Acl:
    """``spec.acl``: check every request against the ``plain_acl.yml`` in a Secret, which may also
    hold the ``accessKey``/``secretKey`` the brokers (and the operator) sign their own requests with."""

    secret_name: str = ""

    @property
    def enabled(self) -> bool:
        return bool(self.secret_name)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> Acl:
        if not spec:
            return cls()
        name = str(spec.get("secretName") or "")
        if not _DNS_NAME.fullmatch(name):
            raise SpecError("spec.acl.secretName: name the Secret holding plain_acl.yml (a DNS name)")
        return cls(secret_name=name)


@dataclass(frozen=True, slots=True)
class Scheduling:
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    affinity: Mapping[str, Any] | None = None
    """Replaces the default anti-affinity (one pod of a set per node) when given."""
    topology_spread_constraints: tuple[Mapping[str, Any], ...] = ()
    priority_class_name: str | None = None

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> Scheduling:
        spec = spec or {}
        return cls(
            node_selector=dict(spec.get("nodeSelector") or {}),
            tolerations=tuple(spec.get("tolerations") or ()),
            affinity=spec.get("affinity") or None,
            topology_spread_constraints=tuple(spec.get("topologySpreadConstraints") or ()),
            priority_class_name=spec.get("priorityClassName") or None,
        )


@dataclass(frozen=True, slots=True)
class Storage:
    type: str = "persistent"
    """``persistent`` (a claim per pod) or ``ephemeral`` (emptyDir)."""
    size: str = "10Gi"
    storage_class_name: str | None = None
    delete_claim: bool = False
    """Delete claims with the Broker / on scale-down (StatefulSet PVC retention policy)."""

    @property
    def persistent(self) -> bool:
        return self.type == "persistent"

    @classmethod
    def from_spec(
        cls, spec: Mapping[str, Any] | None, where: str = "spec.storage", size: str = "10Gi"
    ) -> Storage:
        spec = spec or {}
        kind = str(spec.get("type", "persistent"))
        if kind not in ("persistent", "ephemeral"):
            raise SpecError(f"{where}.type {kind!r}: expected persistent or ephemeral")
        return cls(
            type=kind,
            size=str(spec.get("size", size)),
            storage_class_name=spec.get("storageClassName") or None,
            delete_claim=bool(spec.get("deleteClaim", False)),
        )


def _resources(spec: Mapping[str, Any] | None) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for key in ("requests", "limits"):
        values = (spec or {}).get(key) or {}
        if values:
            out[key] = {str(k): str(v) for k, v in values.items()}
    return out


CONTROLLER_STORAGE_SIZE = "1Gi"


@dataclass(frozen=True, slots=True)
class NameServerModel:
    ref: ObjectRef
    replicas: int = 2
    image: str | None = None
    image_pull_policy: str | None = None
    resources: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    scheduling: Scheduling = field(default_factory=Scheduling)
    metrics: Metrics = field(default_factory=Metrics)
    tls: Tls = field(default_factory=Tls)
    auth: Auth = field(default_factory=Auth)
    """``spec.auth``: ACL 2.0 (give it the Secret of its Brokers' spec.auth: they sign with it)."""
    acl: Acl = field(default_factory=Acl)
    """``spec.acl``: the name servers check every request against the Secret's ``plain_acl.yml``
    (reading routes needs an account; registering brokers, deleting topics, KV writes an admin one)."""
    secrets_hash: str = ""
    """Of the Secrets spec.tls and spec.acl name, less ``plain_acl.yml`` (set by the reconciler):
    pods roll when it changes."""
    nodes: int | None = None
    """How many nodes the cluster has (set by the reconciler; None when it may not list them): with
    a node for each name server, they must run on different nodes."""
    controller: bool = False
    """``spec.controller.enabled``: the name servers also run the controller that elects the
    masters of Brokers with automatic failover (its instances agree by majority: 3 name servers
    survive one loss). On by default, except with 2 name servers (which cannot lose one)."""
    replace_after: float = 300.0
    """``spec.nodeLoss.replaceAfter`` in seconds (see :mod:`.nodeloss`)."""
    controller_storage: Storage = field(default_factory=lambda: Storage(size=CONTROLLER_STORAGE_SIZE))
    """``spec.controller.storage``: where each instance keeps the controller's state (the elected
    masters, epochs, in-sync sets): a claim per pod by default, so that losing pods loses no
    committed change; ``type: ephemeral`` keeps it in the pod."""

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> NameServerModel:
        spec, ref = body.get("spec") or {}, ObjectRef.from_body(body)
        replicas = int(spec.get("replicas", 2))
        if replicas < 1:
            raise SpecError(f"spec.replicas {replicas}: at least one name server is needed")
        asked = (spec.get("controller") or {}).get("enabled")
        controller = replicas != 2 if asked is None else bool(asked)
        if controller and replicas == 2:
            raise SpecError("spec.controller: 2 name servers cannot lose one and keep a majority; "
                            "give spec.replicas 1 or 3 (or more, odd)")
        storage = Storage.from_spec((spec.get("controller") or {}).get("storage"), "spec.controller.storage",
                                    CONTROLLER_STORAGE_SIZE)  # fmt: skip
        return cls(
            controller=controller,
            controller_storage=storage,
            replace_after=_replace_after(spec.get("nodeLoss")),
            ref=ref,
            replicas=replicas,
            image=spec.get("image") or None,
            image_pull_policy=spec.get("imagePullPolicy") or None,
            resources=_resources(spec.get("resources")),
            scheduling=Scheduling.from_spec(spec.get("scheduling")),
            metrics=Metrics.from_spec(spec.get("metrics")),
            tls=_parsed(functools.partial(Tls.from_spec, resource=ref.name), spec.get("tls")),
            acl=Acl.from_spec(spec.get("acl")),
            auth=_auth(spec),
        )


def _auth(spec: Mapping[str, Any]) -> Auth:
    auth = _parsed(Auth.from_spec, spec.get("auth"))
    if auth.enabled and spec.get("acl"):
        raise SpecError("spec.acl and spec.auth: choose one (ACL 1.0's plain_acl.yml or ACL 2.0's users)")
    return auth


@dataclass(frozen=True, slots=True)
class BrokerModel:
    ref: ObjectRef
    cluster_name: str
    namesrv_name: str | None = None
    """A NameServer in the same namespace (exclusive with ``namesrv_addresses``)."""
    namesrv_addresses: tuple[str, ...] = ()
    groups: int = 1
    replicas_per_group: int = 1
    replication_mode: str = "ASYNC"
    flush_mode: str = "ASYNC"
    storage: Storage = field(default_factory=Storage)
    image: str | None = None
    image_pull_policy: str | None = None
    resources: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    config: Mapping[str, str] = field(default_factory=dict)
    scheduling: Scheduling = field(default_factory=Scheduling)
    metrics: Metrics = field(default_factory=Metrics)
    grpc: Grpc = field(default_factory=Grpc)
    force_scale_down: bool = False
    tls: Tls = field(default_factory=Tls)
    acl: Acl = field(default_factory=Acl)
    auth: Auth = field(default_factory=Auth)
    """``spec.auth``: ACL 2.0 users and ACLs (see :mod:`.auth_spec`)."""
    namesrv_tls: bool = False
    """``spec.nameServer.tls``: the name servers serve TLS (brokers register over it)."""
    failover: bool = False
    """Automatic failover (controller mode): the name servers' controller elects each group's
    master among its in-sync replicas. ``spec.failover.enabled``, by default on for groups of 2 or
    more replicas whose NameServer runs a controller (the reconciler settles it: ``failover_asked``)."""
    failover_asked: bool | None = None
    """``spec.failover.enabled`` as given (None: not given, the default applies)."""
    master_service_asked: bool = False
    """``spec.failover.masterService``: see ``master_service``."""
    replace_after: float = 300.0
    """``spec.nodeLoss.replaceAfter`` in seconds (see :mod:`.nodeloss`)."""
    secrets_hash: str = ""
    """Of the Secrets spec.tls and spec.acl name (set by the reconciler): pods roll when it changes
    (a new certificate or account needs a restart; the ACL file itself is re-read live)."""
    nodes: int | None = None
    """How many nodes the cluster has (set by the reconciler; None when it may not list them): with
    a node for each replica, a group's replicas must run on different nodes."""
    short: frozenset[str] = frozenset()
    """Groups with fewer Ready pods than replicas (set by the reconciler from the StatefulSets): their
    slaves' disruption budget lets none go until the group is whole again."""

    @property
    def master_role(self) -> str:
        return "SYNC_MASTER" if self.replication_mode == "SYNC" else "ASYNC_MASTER"

    @property
    def master_service(self) -> bool:
        """Each group's master is reached through its ``<group>-master`` Service (with failover)."""
        return self.failover and self.master_service_asked

    @property
    def flush_disk_type(self) -> str:
        return "SYNC_FLUSH" if self.flush_mode == "SYNC" else "ASYNC_FLUSH"

    def group_name(self, index: int) -> str:
        """brokerName of group ``index`` (also its StatefulSet's name)."""
        return broker_group_name(self.ref.name, index)

    @property
    def group_names(self) -> list[str]:
        """brokerName of every group the spec asks for, in order."""
        return [self.group_name(i) for i in range(self.groups)]

    def with_controller(self, controller: bool) -> BrokerModel:
        """Failover settled: when ``spec.failover.enabled`` is not given, on for groups of 2 or more
        replicas if the name servers run a controller (``controller``), else off."""
        if self.failover_asked is not None:
            return self
        return dataclasses.replace(self, failover=controller and self.replicas_per_group >= 2)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> BrokerModel:
        ref = ObjectRef.from_body(body)
        spec = body.get("spec") or {}
        meta = body.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        ns = spec.get("nameServer") or {}
        name, addresses = ns.get("name") or None, tuple(ns.get("addresses") or ())
        if bool(name) == bool(addresses):
            raise SpecError("spec.nameServer: give exactly one of name and addresses")
        groups = int(spec.get("groups", 1))
        replicas = int(spec.get("replicasPerGroup", 1))
        if groups < 1:
            raise SpecError(f"spec.groups {groups}: at least one group is needed")
        if replicas < 1:
            raise SpecError(f"spec.replicasPerGroup {replicas}: at least one replica (the master) is needed")
        replication = str(spec.get("replicationMode", "ASYNC"))
        flush = str(spec.get("flushMode", "ASYNC"))
        if replication not in ("ASYNC", "SYNC") or flush not in ("ASYNC", "SYNC"):
            raise SpecError("spec.replicationMode and spec.flushMode take ASYNC or SYNC")
        if replication == "SYNC" and replicas < 2:
            raise SpecError("spec.replicasPerGroup: replicationMode SYNC needs at least 2 replicas per group")
        asked = (spec.get("failover") or {}).get("enabled")
        failover = bool(asked)  # the default (None) is settled by with_controller()
        if failover and replicas < 2:
            raise SpecError("spec.failover: automatic failover needs spec.replicasPerGroup of 2 or more "
                            "(a slave to elect)")
        master_service = bool((spec.get("failover") or {}).get("masterService", False))
        if master_service and (asked is False or replicas < 2):
            raise SpecError("spec.failover.masterService follows the elected master: it needs automatic "
                            "failover (spec.failover.enabled, 2 or more spec.replicasPerGroup)")
        config = {str(k): _conf_value(v) for k, v in (spec.get("config") or {}).items()}
        grpc, metrics = Grpc.from_spec(spec.get("grpc")), Metrics.from_spec(spec.get("metrics"))
        if grpc.enabled and metrics.enabled and grpc.port == metrics.port:
            raise SpecError(f"spec.grpc.port {grpc.port} is spec.metrics.port too: give them different ports")
        reserved = sorted(RESERVED_CONFIG_KEYS & set(config))
        if reserved:
            raise SpecError(
                f"spec.config: {', '.join(reserved)} are set by the operator (TLS and ACL come from "
                "spec.tls, spec.acl and spec.auth)"
            )
        auth = _auth(spec)
        return cls(
            ref=ref,
            cluster_name=str(spec.get("clusterName") or ref.name),
            namesrv_name=name,
            namesrv_addresses=addresses,
            groups=groups,
            replicas_per_group=replicas,
            replication_mode=replication,
            flush_mode=flush,
            storage=Storage.from_spec(spec.get("storage")),
            image=spec.get("image") or None,
            image_pull_policy=spec.get("imagePullPolicy") or None,
            resources=_resources(spec.get("resources")),
            config=config,
            scheduling=Scheduling.from_spec(spec.get("scheduling")),
            metrics=metrics,
            grpc=grpc,
            force_scale_down=str(annotations.get(ANNOTATION_FORCE_SCALE_DOWN, "")).lower() == "true",
            tls=_parsed(functools.partial(Tls.from_spec, resource=ref.name), spec.get("tls")),
            acl=Acl.from_spec(spec.get("acl")),
            auth=auth,
            namesrv_tls=bool(ns.get("tls", False)),
            failover=failover,
            failover_asked=None if asked is None else bool(asked),
            master_service_asked=master_service,
            replace_after=_replace_after(spec.get("nodeLoss")),
        )


def _replace_after(spec: Mapping[str, Any] | None) -> float:
    text = str((spec or {}).get("replaceAfter", "5m"))
    try:
        return parse_duration(text)
    except ValueError as e:
        raise SpecError(f"spec.nodeLoss.replaceAfter: {e}") from None


def _conf_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True, slots=True)
class TopicModel:
    ref: ObjectRef
    cluster_ref: str
    topic_name: str
    read_queue_nums: int = 8
    write_queue_nums: int = 8
    perm: int = 6
    order: bool = False
    message_type: str = "NORMAL"

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> TopicModel:
        ref = ObjectRef.from_body(body)
        spec = body.get("spec") or {}
        topic = str(spec.get("topicName") or ref.name)
        if not is_legal_name(topic) or len(topic.encode()) > 127:
            raise SpecError(
                f"spec.topicName {topic!r}: use at most 127 of letters, digits, '%', '|', '_', '-'"
            )
        read, write = int(spec.get("readQueueNums", 8)), int(spec.get("writeQueueNums", 8))
        if not (1 <= read <= 1024 and 1 <= write <= 1024):
            raise SpecError("spec.readQueueNums and spec.writeQueueNums must be within 1..1024")
        message_type = str(spec.get("messageType", "NORMAL"))
        if message_type not in ("NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"):
            raise SpecError(
                f"spec.messageType {message_type!r}: use NORMAL, FIFO, DELAY, TRANSACTION or MIXED"
            )
        order = spec.get("order")
        return cls(
            ref=ref,
            cluster_ref=str((spec.get("clusterRef") or {}).get("name") or ""),
            topic_name=topic,
            read_queue_nums=read,
            write_queue_nums=write,
            perm=int(spec.get("perm", 6)),
            order=bool(order) if order is not None else message_type == "FIFO",
            message_type=message_type,
        )


@dataclass(frozen=True, slots=True)
class OffsetReset:
    """``spec.resetOffset``: move the group's offsets on ``topic`` to ``timestamp_ms`` (0 the earliest,
    -1 the latest), once per ``id``."""

    id: str
    topic: str
    to: str
    timestamp_ms: int

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> OffsetReset | None:
        if not spec:
            return None
        rid, topic, to = (str(spec.get(k) or "").strip() for k in ("id", "topic", "to"))
        if not rid:
            raise SpecError("spec.resetOffset.id: give any text; a new one resets again")
        if not is_legal_name(topic):
            raise SpecError(
                f"spec.resetOffset.topic {topic!r}: name the topic (letters, digits, '%', '|', '_', '-')"
            )
        return cls(rid, topic, to, reset_timestamp(to))


def reset_timestamp(to: str) -> int:
    """``earliest`` → 0, ``latest`` → -1, RFC 3339 or epoch milliseconds → ms (SpecError otherwise)."""
    import datetime

    low = to.lower()
    if low == "earliest":
        return 0
    if low == "latest":
        return -1
    if to.isdigit():
        return int(to)
    try:
        when = datetime.datetime.fromisoformat(to.replace("Z", "+00:00"))
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise SpecError(f"spec.resetOffset.to {to!r}: use earliest, latest, an RFC 3339 time with its zone "
                        "(2026-11-25T10:00:00Z) or milliseconds since the epoch")
    return int(when.timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class ConsumerGroupModel:
    ref: ObjectRef
    cluster_ref: str
    group_name: str
    broadcast: bool = True
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    retry_max_times: int = 16
    retry_queue_nums: int = 1
    orderly: bool = False
    slow_consumer_broker_id: int = 1
    reset_offset: OffsetReset | None = None
    autoscale: Autoscale | None = None

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> ConsumerGroupModel:
        ref = ObjectRef.from_body(body)
        spec = body.get("spec") or {}
        group = str(spec.get("groupName") or ref.name)
        if not is_legal_name(group) or len(group.encode()) > 120:
            raise SpecError(
                f"spec.groupName {group!r}: use at most 120 of letters, digits, '%', '|', '_', '-'"
            )
        return cls(
            ref=ref,
            cluster_ref=str((spec.get("clusterRef") or {}).get("name") or ""),
            group_name=group,
            broadcast=bool(spec.get("broadcast", True)),
            consume_enable=bool(spec.get("consumeEnable", True)),
            consume_from_min_enable=bool(spec.get("consumeFromMinEnable", True)),
            retry_max_times=int(spec.get("retryMaxTimes", 16)),
            retry_queue_nums=int(spec.get("retryQueueNums", 1)),
            orderly=bool(spec.get("orderly", False)),
            slow_consumer_broker_id=int(spec.get("slowConsumerBrokerId", 1)),
            reset_offset=OffsetReset.from_spec(spec.get("resetOffset")),
            autoscale=_autoscale(spec.get("autoscale")),
        )


def _autoscale(spec: Mapping[str, Any] | None) -> Autoscale | None:
    return _parsed(Autoscale.from_spec, spec)


def _parsed(parse: Callable[[Mapping[str, Any] | None], T], spec: Mapping[str, Any] | None) -> T:
    """``parse(spec)`` of a spec part parsed in a module of its own, its ValueError a SpecError."""
    try:
        return parse(spec)
    except (ValueError, TypeError) as e:
        raise SpecError(str(e)) from None
