"""Broker settings, grouped, loadable from a RocketMQ-style ``broker.conf``.

``broker.conf`` is a Java properties file; keys are Apache RocketMQ's own (``brokerName``,
``listenPort``, ``storePathRootDir`` …) so an existing file works unchanged. Unknown keys are kept in
:attr:`BrokerSettings.extra` and logged once, never fatal: RocketMQ has hundreds of knobs and a user
migrating a file should not have to prune it first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

from pyrocketmq.remoting.limits import ConnectionLimits
from pyrocketmq.remoting.names import DEFAULT_BROKER_PORT, check_broker_name
from pyrocketmq.remoting.properties import ConfigError
from pyrocketmq.remoting.tls import ClientTls, ServerTls, TlsConfigError
from pyrocketmq.server.auth_settings import SECRET_AUTH_KEYS, AuthSettings, read_auth_settings

from .store.settings import StoreSettings

_T = TypeVar("_T")


class BrokerRole(StrEnum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


@dataclass(slots=True)
class IdentitySettings:
    """Who this broker is. Mutable only in controller mode, where ``role`` and ``broker_id`` follow
    the controller's elections (:mod:`pyrocketmq.broker.ha.replica`); everywhere else read-only."""

    cluster_name: str = "DefaultCluster"
    """``brokerClusterName``: the cluster this broker announces to the name servers."""
    broker_name: str = "broker-a"
    """``brokerName``: master and slaves of one group share it."""
    broker_id: int = 0
    """``brokerId``: 0 is the master, > 0 a slave."""
    role: BrokerRole = BrokerRole.ASYNC_MASTER
    """``brokerRole``: ASYNC_MASTER, SYNC_MASTER or SLAVE (controller mode: the role it takes while
    master)."""
    master_role: BrokerRole = BrokerRole.ASYNC_MASTER
    """Controller mode: the configured ``brokerRole``, the replication mode it uses while master."""
    replica_id: int = 0
    """Controller mode: the configured ``brokerId`` (1, 2, ...), naming this replica to the controller;
    it registers as 0 while master and as ``replica_id`` while slave."""


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    enabled: bool = False
    """``enableControllerMode``: the controller elects this group's master (automatic failover)."""
    addrs: tuple[str, ...] = ()
    """``controllerAddr``: controllers, ``host:port`` separated by ``;`` (name servers with
    ``enableControllerInNamesrv=true``)."""
    heartbeat_interval_ms: int = 1000
    """``controllerHeartbeatIntervalMs``: how often the replica reports to the controller."""
    ha_max_gap_not_in_sync: int = 256 * 1024
    """``haMaxGapNotInSync``: a slave further behind the master than this many bytes leaves the
    in-sync set (and one this close joins it)."""
    min_in_sync_replicas: int = 1
    """``minInSyncReplicas``: a SYNC_MASTER refuses sends (SLAVE_NOT_AVAILABLE) while its in-sync set,
    itself included, is smaller."""


@dataclass(frozen=True, slots=True)
class NetworkSettings:
    listen_port: int = DEFAULT_BROKER_PORT
    """``listenPort``: the remoting port clients use (0 picks a free one)."""
    bind_address: str = "0.0.0.0"
    """``bindAddress``: the interface to listen on."""
    broker_ip: str = "127.0.0.1"
    """``brokerIP1``: the address announced to name servers and written into message ids."""
    namesrv_addrs: tuple[str, ...] = ()
    """``namesrvAddr``: name servers, ``host:port`` separated by ``;``."""
    register_interval_ms: int = 30_000
    """``registerNameServerPeriod``: how often to re-register with every name server."""
    client_channel_expiry_ms: int = 120_000
    """How long a client connection may stay silent before it is dropped from its groups."""
    server_channel_max_idle_s: int = 120
    """``serverChannelMaxIdleTimeSeconds``: a connection silent both ways this long is closed (0 = never)."""
    acl_file: str = ""
    """The ACL file (``plain_acl.yml``) when ``aclEnable=true``: ``aclConfigFile``, else
    ``$ROCKETMQ_HOME/conf/plain_acl.yml``; empty = no access control."""
    access_key: str = ""
    """``accessKey``/``secretKey``: the account this broker signs its own requests with (to the name
    servers, and a slave's to its master when the master checks ACLs)."""
    secret_key: str = field(default="", repr=False)
    tls: ServerTls = field(default_factory=ServerTls)
    """``tls.server.*``: TLS on the client-facing ports (see :mod:`pyrocketmq.remoting.tls`)."""
    client_tls: ClientTls = field(default_factory=ClientTls)
    """``tls.enable`` and ``tls.client.*``: TLS to the name servers."""
    peer_tls: ClientTls = field(default_factory=ClientTls)
    """A slave's TLS to its master's HA port: on with ``tls.server.mode=enforcing``, with this broker's
    certificate (:meth:`ServerTls.peer_client`)."""
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    """``serverMaxConnections`` (10000), ``serverMaxRequestsInFlight`` (65536 per connection),
    ``serverMaxQueuedBytes`` (64 MiB of unread answers per connection), ``serverFrameTimeoutSeconds``
    (30: from a frame's first byte to its last), ``serverMaxUnprovenBytes`` (64 MiB of partial frames
    of all the connections with no request accepted yet); 0 = no limit."""
    metrics_port: int = 0
    """``metricsPort``: HTTP port of ``/metrics``, ``/healthz`` and ``/readyz`` (0 = not served);
    when the key is absent, ``PYROCKETMQ_METRICS_PORT`` (what the operator's pods set)."""
    grpc_port: int | None = None
    """``grpcListenPort``: the RocketMQ 5 gRPC endpoint for the 5.x clients (0 picks a free port);
    absent = not served."""
    ha_master_address: str = ""
    """``haMasterAddress``: a slave's master HA address ``host:port``; empty = the one the name
    server returns on registration (the master's ``listenPort + 1``)."""
    master_service_addr: str = ""
    """``masterServiceAddr``: ``host:port`` registered with the name servers while this broker is its
    group's master, instead of ``brokerIP1`` and the listen port: an address that follows the master
    (the operator's per-group Service), so clients keep it across a failover. A DNS name is resolved
    at each registration. Empty = ``brokerIP1``."""


@dataclass(frozen=True, slots=True)
class TopicSettings:
    auto_create_topic: bool = True
    """``autoCreateTopicEnable``: keep TBW102 so producers can create topics by sending."""
    auto_create_subscription_group: bool = True
    """``autoCreateSubscriptionGroup``: create a group's config on first use."""
    default_topic_queue_nums: int = 8
    """``defaultTopicQueueNums``: queues of TBW102 (a created topic gets at most this many)."""
    trace_topic: str | None = None
    """``msgTraceTopicName`` when ``traceTopicEnable=true``: created at start for clients' traces."""


@dataclass(frozen=True, slots=True)
class PullSettings:
    long_polling: bool = True
    """``longPollingEnable``: hold a pull that finds nothing until a message lands or it times out."""
    short_polling_time_ms: int = 1000
    """``shortPollingTimeMills``: the hold when long polling is off."""
    max_transfer_bytes_hot: int = 256 * 1024
    """``maxTransferBytesOnMessageInMemory``."""
    max_transfer_count_hot: int = 32
    """``maxTransferCountOnMessageInMemory``."""
    max_transfer_bytes_cold: int = 64 * 1024
    """``maxTransferBytesOnMessageInDisk``."""
    max_transfer_count_cold: int = 8
    """``maxTransferCountOnMessageInDisk``."""
    slave_read_enable: bool = False
    """``slaveReadEnable``: suggest a slave to consumers that are far behind."""
    property_filter: bool = False
    """``enablePropertyFilter``: serve SQL92 selectors (``MessageSelector.bySql``); off, as Apache's
    default, such consumers are told the broker does not support them."""


SECRET_KEYS = frozenset({"secretKey", "tls.server.keyPassword", "tls.client.keyPassword"}) | SECRET_AUTH_KEYS
"""Settings never shown (GET_BROKER_CONFIG)."""


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    identity: IdentitySettings = field(default_factory=IdentitySettings)
    network: NetworkSettings = field(default_factory=NetworkSettings)
    topics: TopicSettings = field(default_factory=TopicSettings)
    pull: PullSettings = field(default_factory=PullSettings)
    controller: ControllerSettings = field(default_factory=ControllerSettings)
    auth: AuthSettings = field(default_factory=AuthSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    extra: dict[str, str] = field(default_factory=dict)
    """Keys this broker does not use (kept so they can be reported)."""
    effective: dict[str, str] = field(default_factory=dict)
    """Every key the broker reads with the value in use (defaults included; secrets left out): what
    GET_BROKER_CONFIG (mqadmin ``getBrokerConfig``) shows."""

    @property
    def addr(self) -> str:
        return f"{self.network.broker_ip}:{self.network.listen_port}"

    @classmethod
    def from_conf(cls, conf: dict[str, str]) -> BrokerSettings:
        used: set[str] = set()
        seen: dict[str, str] = {}

        def get(key: str, default: str) -> str:
            used.add(key)
            seen[key] = value = conf.get(key, default).strip()
            return value

        def get_int(key: str, default: int) -> int:
            raw = get(key, str(default))
            try:
                return int(raw)
            except ValueError:
                raise ConfigError(f"{key}={raw!r}: expected an integer") from None

        def get_bool(key: str, default: bool) -> bool:
            raw = get(key, "true" if default else "false").lower()
            if raw not in ("true", "false"):
                raise ConfigError(f"{key}={raw!r}: expected true or false")
            return raw == "true"

        identity = _identity(get, get_int, (controller := _controller(get, get_int, get_bool)).enabled)
        namesrv = get("namesrvAddr", os.environ.get("NAMESRV_ADDR", ""))
        addrs = tuple(a.strip() for a in re.split(r"[;,]", namesrv) if a.strip())
        for a in addrs:
            _host_port("namesrvAddr entry", a)
        port = get_int("listenPort", DEFAULT_BROKER_PORT)
        if not 0 <= port <= 65535:
            raise ConfigError(f"listenPort={port}: expected 0..65535")
        metrics_port = get_int("metricsPort", int(os.environ.get("PYROCKETMQ_METRICS_PORT", "0") or 0))
        if not 0 <= metrics_port <= 65535 or (metrics_port and metrics_port == port):
            raise ConfigError(f"metricsPort={metrics_port}: expected 0 (off) or a port other than listenPort")
        server_tls, client_tls, peer_tls = _network_tls(conf, used)
        network = NetworkSettings(
            listen_port=port, bind_address=get("bindAddress", "0.0.0.0"),
            broker_ip=get("brokerIP1", "127.0.0.1"), namesrv_addrs=addrs,
            register_interval_ms=max(10_000, min(60_000, get_int("registerNameServerPeriod", 30_000))),
            client_channel_expiry_ms=get_int("channelExpiredTimeout", 120_000),
            server_channel_max_idle_s=_non_negative("serverChannelMaxIdleTimeSeconds",
                                                    get_int("serverChannelMaxIdleTimeSeconds", 120)),
            limits=_limits(get_int),
            acl_file=_acl_file(get_bool("aclEnable", False), get("aclConfigFile", "")),
            access_key=get("accessKey", ""), secret_key=get("secretKey", ""),
            tls=server_tls, client_tls=client_tls, peer_tls=peer_tls,
            metrics_port=metrics_port, ha_master_address=get("haMasterAddress", ""),
            master_service_addr=_host_port("masterServiceAddr", get("masterServiceAddr", "")),
            grpc_port=_grpc_port(get("grpcListenPort", ""), port, metrics_port),
        )
        topics = TopicSettings(
            trace_topic=(get("msgTraceTopicName", "RMQ_SYS_TRACE_TOPIC")
                         if get_bool("traceTopicEnable", False) else None),
            auto_create_topic=get_bool("autoCreateTopicEnable", True),
            auto_create_subscription_group=get_bool("autoCreateSubscriptionGroup", True),
            default_topic_queue_nums=get_int("defaultTopicQueueNums", 8),
        )
        pull = PullSettings(
            long_polling=get_bool("longPollingEnable", True),
            short_polling_time_ms=get_int("shortPollingTimeMills", 1000),
            max_transfer_bytes_hot=get_int("maxTransferBytesOnMessageInMemory", 256 * 1024),
            max_transfer_count_hot=get_int("maxTransferCountOnMessageInMemory", 32),
            max_transfer_bytes_cold=get_int("maxTransferBytesOnMessageInDisk", 64 * 1024),
            max_transfer_count_cold=get_int("maxTransferCountOnMessageInDisk", 8),
            slave_read_enable=get_bool("slaveReadEnable", False),
            property_filter=get_bool("enablePropertyFilter", False),
        )
        auth = _auth(get, get_bool)
        try:
            store = StoreSettings.from_conf(conf)
            if not store.delay_levels_ms:
                raise ValueError(f"messageDelayLevel={store.message_delay_level!r}: "
                                 "expected levels like '1s 5s 1m 2h'")
        except ValueError as e:
            raise ConfigError(str(e)) from None
        extra = {k: v for k, v in conf.items() if k not in used and not StoreSettings.knows(k)}
        seen.update(store.as_conf())
        seen.update((k, v.strip()) for k, v in conf.items() if k in used)
        effective = {k: v for k, v in sorted(seen.items()) if k not in SECRET_KEYS}
        return cls(identity=identity, network=network, topics=topics, pull=pull, controller=controller,
                   auth=auth, store=store, extra=extra, effective=effective)


def _tls(conf: dict[str, str], used: set[str], read: Callable[[dict[str, str]], _T]) -> _T:
    used.update(k for k in conf if k.startswith("tls."))
    try:
        return read(conf)
    except TlsConfigError as e:
        raise ConfigError(str(e)) from None


def _network_tls(conf: dict[str, str], used: set[str]) -> tuple[ServerTls, ClientTls, ClientTls]:
    """``tls.server.*``, ``tls.client.*`` and what the two make of a slave's TLS to its master."""
    server, client = _tls(conf, used, ServerTls.from_conf), _tls(conf, used, ClientTls.from_conf)

    def peer(_: dict[str, str]) -> ClientTls:
        tls = server.peer_client(client)
        tls.context()  # a trust or certificate file that does not load fails at start, named
        server.peer_context()
        return tls

    return server, client, _tls(conf, used, peer)


def _controller(get: Callable[[str, str], str], get_int: Callable[[str, int], int],
                get_bool: Callable[[str, bool], bool]) -> ControllerSettings:
    enabled = get_bool("enableControllerMode", False)
    addrs = tuple(a.strip() for a in re.split(r"[;,]", get("controllerAddr", "")) if a.strip())
    if enabled and not addrs:
        raise ConfigError("enableControllerMode=true needs controllerAddr (host:port of the controllers)")
    for a in addrs:
        host, _, port = a.rpartition(":")
        if not host or not port.isdigit():
            raise ConfigError(f"controllerAddr entry {a!r}: expected host:port")
    interval = get_int("controllerHeartbeatIntervalMs", 1000)
    if not 100 <= interval <= 60_000:
        raise ConfigError(f"controllerHeartbeatIntervalMs={interval}: expected 100..60000")
    min_isr = get_int("minInSyncReplicas", 1)
    if min_isr < 1:
        raise ConfigError(f"minInSyncReplicas={min_isr}: expected 1 or more")
    return ControllerSettings(enabled=enabled, addrs=addrs, heartbeat_interval_ms=interval,
                              ha_max_gap_not_in_sync=_non_negative("haMaxGapNotInSync",
                                                                   get_int("haMaxGapNotInSync", 256 * 1024)),
                              min_in_sync_replicas=min_isr)


def _identity(get: Callable[[str, str], str], get_int: Callable[[str, int], int],
              controller_mode: bool = False) -> IdentitySettings:
    role_raw = get("brokerRole", "ASYNC_MASTER").upper()
    try:
        role = BrokerRole(role_raw)
    except ValueError:
        raise ConfigError(f"brokerRole={role_raw!r}: expected ASYNC_MASTER, SYNC_MASTER or SLAVE") from None
    broker_id = get_int("brokerId", 0)
    for key, what in (("brokerName", "broker-a"), ("brokerClusterName", "DefaultCluster")):
        if (problem := check_broker_name(get(key, what), key)) is not None:  # name servers refuse it
            raise ConfigError(problem)
    if controller_mode:
        if broker_id < 1:
            raise ConfigError(f"brokerId={broker_id}: in controller mode each replica of the group needs its "
                              "own brokerId from 1 (it registers as 0 while it is the master)")
        if role == BrokerRole.SLAVE:
            raise ConfigError("brokerRole=SLAVE: in controller mode the controller picks the roles; give the "
                              "replication mode the master uses, ASYNC_MASTER or SYNC_MASTER")
        # a replica starts as a slave and serves writes only once the controller made it master
        return IdentitySettings(cluster_name=get("brokerClusterName", "DefaultCluster"),
                                broker_name=get("brokerName", "broker-a"), broker_id=broker_id,
                                role=BrokerRole.SLAVE, replica_id=broker_id, master_role=role)
    if role == BrokerRole.SLAVE and broker_id == 0:
        raise ConfigError("brokerRole=SLAVE needs brokerId > 0")
    if role != BrokerRole.SLAVE:
        broker_id = 0
    return IdentitySettings(cluster_name=get("brokerClusterName", "DefaultCluster"),
                            broker_name=get("brokerName", "broker-a"), broker_id=broker_id, role=role)


def _acl_file(enabled: bool, path: str) -> str:
    if not enabled:
        return ""
    if not path:
        home = os.environ.get("ROCKETMQ_HOME", "")
        if not home:
            raise ConfigError("aclEnable=true: give aclConfigFile (the plain_acl.yml) or set ROCKETMQ_HOME")
        path = os.path.join(home, "conf", "plain_acl.yml")
    return path


def _auth(get: Callable[[str, str], str], get_bool: Callable[[str, bool], bool]) -> AuthSettings:
    auth = read_auth_settings(get, get_bool)
    return auth


def _limits(get_int: Callable[[str, int], int]) -> ConnectionLimits:
    def read(key: str, default: int) -> int:
        return _non_negative(key, get_int(key, default))

    return ConnectionLimits(
        max_connections=read("serverMaxConnections", 10_000),
        max_in_flight=read("serverMaxRequestsInFlight", 65_536),
        max_queued_bytes=read("serverMaxQueuedBytes", 64 << 20),
        frame_timeout_s=read("serverFrameTimeoutSeconds", 30),
        max_unproven_bytes=read("serverMaxUnprovenBytes", 64 << 20),
    )


def _non_negative(key: str, value: int) -> int:
    if value < 0:
        raise ConfigError(f"{key}={value}: expected 0 or more")
    return value


def _host_port(key: str, raw: str) -> str:
    """An optional ``host:port`` setting (empty = unset)."""
    raw = raw.strip()
    host, _, port = raw.rpartition(":")
    if raw and (not host or not port.isdigit() or not 0 < int(port) <= 65535):
        raise ConfigError(f"{key}={raw!r}: expected host:port")
    return raw


def _grpc_port(raw: str, listen_port: int, metrics_port: int) -> int | None:
    if not raw.strip():
        return None
    try:
        port = int(raw)
    except ValueError:
        raise ConfigError(f"grpcListenPort={raw!r}: expected a port number") from None
    taken = (listen_port, listen_port + 1, listen_port - 2, metrics_port)
    if not 0 <= port <= 65535 or (port and port in taken):
        raise ConfigError(f"grpcListenPort={port}: expected 0 (a free port) or a port other than listenPort, "
                          "its HA port (+1), its fast port (-2) and metricsPort")
    return port
