"""Name-server settings, loadable from a ``namesrv.conf`` with RocketMQ's keys.

Java properties syntax (:mod:`pyrocketmq.remoting.properties`). Keys this name server does not use are
reported (logged by the caller), not rejected, so a Java ``namesrv.conf`` works unchanged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from pyrocketmq.remoting.limits import ConnectionLimits
from pyrocketmq.remoting.names import DEFAULT_NAMESRV_PORT
from pyrocketmq.remoting.properties import ConfigError, read_properties
from pyrocketmq.remoting.tls import ClientTls, ServerTls, TlsConfigError
from pyrocketmq.server.auth_settings import AuthSettings, read_auth_settings


@dataclass(frozen=True, slots=True)
class NamesrvSettings:
    listen_port: int = DEFAULT_NAMESRV_PORT
    """``listenPort``: the remoting port (0 picks a free one)."""

    host: str = "0.0.0.0"
    """``bindAddress``: the address to listen on."""

    kv_config_path: str | None = None
    """``kvConfigPath``: where the KV config is kept; default ``<rocketmqHome>/namesrv/kvConfig.json``
    when ``rocketmqHome`` is set, else in memory only."""

    scan_interval_ms: int = 10_000
    """``scanNotActiveBrokerInterval``: how often silent brokers are looked for."""

    broker_expiry_ms: int = 120_000
    """``brokerChannelExpiredTime``: a broker silent this long is removed."""

    server_channel_max_idle_s: int = 120
    """``serverChannelMaxIdleTimeSeconds``: a connection silent both ways this long is closed (0 = never)."""

    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    """``serverMaxConnections``, ``serverMaxRequestsInFlight``, ``serverMaxQueuedBytes``,
    ``serverFrameTimeoutSeconds`` (30: from a frame's first byte to its last) and
    ``serverMaxUnprovenBytes`` (64 MiB of partial frames of all the connections with no request
    accepted yet); 0 = no limit."""

    tls: ServerTls = field(default_factory=ServerTls)
    """``tls.server.*``: TLS for clients and brokers (see :mod:`pyrocketmq.remoting.tls`)."""

    peer_tls: ClientTls = field(default_factory=ClientTls)
    """The controller's TLS to the other controller instances: on with ``tls.server.mode=enforcing``,
    with this server's certificate, trusting ``tls.client.trustCertPath`` or ``tls.server.trustCertPath``
    (:meth:`ServerTls.peer_client`)."""

    acl_file: str | None = None
    """``aclConfigFile`` when ``aclEnable=true``: every request must be signed by an account of this
    ``plain_acl.yml``; registering brokers, deleting topics and writing KV config need an admin one
    (see :mod:`pyrocketmq.server.acl`). None: no check, as Apache's name server."""

    metrics_port: int = 0
    """``metricsPort``: HTTP port of ``/metrics``, ``/healthz`` and ``/readyz`` (0 = not served);
    when the key is absent, ``PYROCKETMQ_METRICS_PORT`` (what the operator's pods set)."""

    auth_seed_wait_ms: int = 0
    """``authSeedWaitMs``: with ACL 2.0 on, ``/readyz`` answers not ready until a super user wrote the KV
    config entry ``pyrocketmq``/``authSeeded`` (an operator that has just given this name server its
    users: until then it would refuse their routes), or this many ms passed since the start; 0: ready
    once serving."""

    controller: bool = False
    """``enableControllerInNamesrv``: also serve the controller of controller-mode broker groups
    (elections, in-sync sets; see :mod:`pyrocketmq.namesrv.controller`)."""

    controller_store_path: str | None = None
    """``controllerStorePath``: the controller's state file; default ``<rocketmqHome>/controller/state.json``
    when ``rocketmqHome`` is set, else ``~/store/controller/state.json``."""

    controller_peers: tuple[tuple[str, str], ...] = ()
    """``controllerPeers``: every controller instance, ``id-host:port;id-host:port;...`` (the name
    servers' own addresses), this one included; empty = a controller alone. Changes are committed by
    a majority of them (Raft), so 3 instances survive the loss of one."""

    controller_self_id: str = "n0"
    """``controllerSelfId``: this instance's id in ``controllerPeers``, or its address there."""

    access_key: str = ""
    """``accessKey``/``secretKey``: the admin account controller instances sign their messages to each
    other with, when the name servers check ACLs."""
    secret_key: str = field(default="", repr=False)

    auth: AuthSettings = field(default_factory=AuthSettings)
    """ACL 2.0 (``authenticationEnabled``, ``authorizationEnabled``, ``initAuthenticationUser``,
    ``innerClientAuthenticationCredentials`` and the whitelists, read as the broker reads them): the
    users and ACLs are kept beside the KV config (:attr:`auth_dir`), which ACL 2.0 therefore needs."""

    controller_broker_timeout_ms: int = 3000
    """``controllerBrokerTimeoutMs``: a master silent this long is replaced (at once when its connection
    closes)."""

    extra: dict[str, str] = field(default_factory=dict)
    """Keys present in the file that this name server does not use."""

    @property
    def auth_dir(self) -> str | None:
        """Where ACL 2.0's users and ACLs are kept: the KV config's directory (None: in memory only,
        and no users are kept)."""
        return os.path.dirname(os.path.abspath(self.kv_config_path)) if self.kv_config_path else None

    @classmethod
    def from_conf(cls, conf: dict[str, str]) -> NamesrvSettings:
        used: set[str] = set()

        def get(key: str) -> str | None:
            used.add(key)
            v = conf.get(key)
            return None if v is None or not v.strip() else v.strip()

        def get_int(key: str, default: int, lo: int, hi: int) -> int:
            raw = get(key)
            if raw is None:
                return default
            try:
                v = int(raw)
            except ValueError:
                raise ConfigError(f"{key}={raw!r}: expected an integer") from None
            if not lo <= v <= hi:
                raise ConfigError(f"{key}={v}: expected {lo}..{hi}")
            return v

        kv_path = get("kvConfigPath")
        home = get("rocketmqHome")
        if kv_path is None and home is not None:
            kv_path = os.path.join(home, "namesrv", "kvConfig.json")
        auth = read_auth_settings(lambda key, default: get(key) or default,
                                  lambda key, default: _flag(key, get(key)) if get(key) else default)
        if auth.enabled and kv_path is None:
            raise ConfigError("authenticationEnabled/authorizationEnabled: the name server keeps users and "
                              "ACLs beside its KV config: give kvConfigPath or rocketmqHome")
        return cls(
            listen_port=get_int("listenPort", DEFAULT_NAMESRV_PORT, 0, 65535),
            host=get("bindAddress") or "0.0.0.0",
            kv_config_path=kv_path,
            scan_interval_ms=get_int("scanNotActiveBrokerInterval", 10_000, 100, 3_600_000),
            broker_expiry_ms=get_int("brokerChannelExpiredTime", 120_000, 1_000, 86_400_000),
            server_channel_max_idle_s=get_int("serverChannelMaxIdleTimeSeconds", 120, 0, 86_400),
            tls=(tls := _server_tls(conf, used)), peer_tls=_peer_tls(conf, tls),
            limits=ConnectionLimits(
                max_connections=get_int("serverMaxConnections", 10_000, 0, 1_000_000),
                max_in_flight=get_int("serverMaxRequestsInFlight", 65_536, 0, 10_000_000),
                max_queued_bytes=get_int("serverMaxQueuedBytes", 64 << 20, 0, 1 << 40),
                frame_timeout_s=get_int("serverFrameTimeoutSeconds", 30, 0, 3600),
                max_unproven_bytes=get_int("serverMaxUnprovenBytes", 64 << 20, 0, 1 << 40),
            ),
            acl_file=_acl_file(get("aclEnable"), get("aclConfigFile"), home),
            metrics_port=get_int("metricsPort", _env_port("PYROCKETMQ_METRICS_PORT"), 0, 65535),
            auth_seed_wait_ms=get_int("authSeedWaitMs", 0, 0, 3_600_000),
            controller=_flag("enableControllerInNamesrv", get("enableControllerInNamesrv")),
            controller_store_path=get("controllerStorePath") or os.path.join(
                home or os.path.expanduser("~"), "controller" if home else "store/controller", "state.json"),
            controller_peers=(peers := _peers(get("controllerPeers"))),
            controller_self_id=_self_id(get("controllerSelfId") or "n0", peers),
            access_key=get("accessKey") or "",
            secret_key=get("secretKey") or "",
            auth=auth,
            controller_broker_timeout_ms=get_int("controllerBrokerTimeoutMs", 3000, 500, 600_000),
            extra={k: v for k, v in conf.items() if k not in used},
        )

    @classmethod
    def load(
        cls, path: str | None, conf_overrides: dict[str, str] | None = None, **overrides: object
    ) -> NamesrvSettings:
        """Settings from ``path`` (if any) with ``conf_overrides`` (RocketMQ keys, ``--set``) over its keys
        and command-line ``overrides`` (snake_case names) applied last."""
        conf = read_properties(path) if path else {}
        conf.update(conf_overrides or {})
        settings = cls.from_conf(conf)
        changes = {k: v for k, v in overrides.items() if v is not None}
        if not changes:
            return settings
        return replace(settings, **changes)  # type: ignore[arg-type]  # names and types checked by the CLI's parser


def _peers(raw: str | None) -> tuple[tuple[str, str], ...]:
    out = []
    for item in (raw or "").replace(",", ";").split(";"):
        if not item.strip():
            continue
        pid, sep, addr = item.strip().partition("-")
        host, _, port = addr.rpartition(":")
        if not sep or not pid or not host or not port.isdigit():
            raise ConfigError(
                f"controllerPeers entry {item.strip()!r}: expected id-host:port, e.g. n0-10.0.0.5:9876"
            )
        out.append((pid, addr))
    if len({p for p, _ in out}) != len(out):
        raise ConfigError("controllerPeers: every id must be different")
    return tuple(out)


def _self_id(self_id: str, peers: tuple[tuple[str, str], ...]) -> str:
    """``controllerSelfId`` names an id of ``controllerPeers``, or its address (what a pod knows of
    itself)."""
    by_addr = {addr: pid for pid, addr in peers}
    if self_id in by_addr:
        return by_addr[self_id]
    if peers and self_id not in {p for p, _ in peers}:
        raise ConfigError(
            f"controllerSelfId={self_id!r}: not among controllerPeers ({', '.join(p for p, _ in peers)})"
        )
    return self_id


def _flag(key: str, raw: str | None) -> bool:
    flag = (raw or "false").lower()
    if flag not in ("true", "false"):
        raise ConfigError(f"{key}={raw!r}: expected true or false")
    return flag == "true"


def _acl_file(enable: str | None, path: str | None, home: str | None) -> str | None:
    flag = (enable or "false").lower()
    if flag not in ("true", "false"):
        raise ConfigError(f"aclEnable={enable!r}: expected true or false")
    if flag == "false":
        return None
    if path:
        return path
    home = home or os.environ.get("ROCKETMQ_HOME", "").strip()
    if home:
        return os.path.join(home, "conf", "plain_acl.yml")
    raise ConfigError("aclEnable=true: give aclConfigFile (the plain_acl.yml), rocketmqHome or ROCKETMQ_HOME")


def _env_port(name: str) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return 0
    if not raw.isdigit() or int(raw) > 65535:
        raise ConfigError(f"{name}={raw!r}: expected a port 0..65535")
    return int(raw)


def _peer_tls(conf: dict[str, str], server: ServerTls) -> ClientTls:
    try:
        peer = server.peer_client(ClientTls.from_conf(conf))
        peer.context()  # a trust file that does not load fails at start, named
    except TlsConfigError as e:
        raise ConfigError(str(e)) from None
    return peer


def _server_tls(conf: dict[str, str], used: set[str]) -> ServerTls:
    used.update(k for k in conf if k.startswith("tls."))
    try:
        return ServerTls.from_conf(conf)
    except TlsConfigError as e:
        raise ConfigError(str(e)) from None
