"""The name server process: settings → state → handlers → server, plus the expiry scan.

A name server is stateless and alone: replicas never talk to each other; brokers register with
every one of them. A broker is removed when the connection it registered through closes, or when
it has been silent for ``broker_expiry_ms`` (checked every ``scan_interval_ms``).

CLI: ``pyrocketmq namesrv [-c namesrv.conf] [--listen-port N] [--host H]`` (also
``python -m pyrocketmq.namesrv``). Once bound it logs ``pyrocketmq namesrv listening on HOST:PORT``;
SIGTERM / SIGINT stop it cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import signal
import sys
import time
from collections.abc import Callable

from pyrocketmq.metrics_server import MetricsServer
from pyrocketmq.remoting.acl_sign import sign as acl_sign
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.properties import ConfigError
from pyrocketmq.remoting.server import RemotingServer
from pyrocketmq.remoting.transport import Connection
from pyrocketmq.server.acl import NAMESRV_ADMIN_CODES, AclConfigError, namesrv_needs
from pyrocketmq.server.acl_namesrv_table import NAMESRV_RULES
from pyrocketmq.server.acl_service import (
    RELOAD_INTERVAL as ACL_RELOAD_INTERVAL,
    AccessControl,
    UserAccess,
    chained,
)
from pyrocketmq.server.auth_metadata import AuthMetadata
from pyrocketmq.server.auth_processor import AuthProcessor
from pyrocketmq.server.auth_settings import outgoing_account
from pyrocketmq.service import Service

from .controller.service import Controller
from .kv_config import KVConfigError, KVConfigManager
from .metrics import NamesrvMetrics
from .processor import NamesrvProcessor
from .route_info import RouteInfoManager
from .settings import NamesrvSettings

log = logging.getLogger("pyrocketmq.namesrv")
AUTH_SEEDED = ("pyrocketmq", "authSeeded")
"""The KV config entry an operator writes once it has given a started name server its users."""


class NameServer:
    """One name server on one port.

    >>> async def demo():
    ...     ns = NameServer(NamesrvSettings(listen_port=0, host="127.0.0.1"))
    ...     port = await ns.start()
    ...     await ns.stop()
    ...     return port > 0
    >>> asyncio.run(demo())
    True
    """

    def __init__(self, settings: NamesrvSettings | None = None) -> None:
        self.settings = settings or NamesrvSettings()
        self.routes = RouteInfoManager()
        self.kv = KVConfigManager(self.settings.kv_config_path)
        self._started = time.monotonic()
        self.processor = NamesrvProcessor(self.routes, self.kv)
        self.server = RemotingServer(
            "namesrv",
            self.processor.handlers(),
            idle_timeout=self.settings.server_channel_max_idle_s or None,
            limits=self.settings.limits,
            tls=self.settings.tls,
        )
        self.server.on_connection_closed(self._connection_closed)
        self.controller: Controller | None = None
        """``enableControllerInNamesrv``: the controller of controller-mode broker groups, on the same
        port."""
        if self.settings.controller:
            self.controller = Controller(self.settings.controller_store_path,
                                         timeout_ms=self.settings.controller_broker_timeout_ms,
                                         self_id=self.settings.controller_self_id,
                                         peers=dict(self.settings.controller_peers) or None,
                                         sign=_signer(self.settings),
                                         tls_context=self.settings.peer_tls.context())
            for code, handler in self.controller.handlers().items():
                self.server.register(code, handler)
            self.server.on_connection_closed(self.controller.connection_closed)
        self.port = 0
        self._scan = Service(
            "broker expiry scan", self.scan_expired, self.settings.scan_interval_ms / 1000, logger=log
        )
        self.metrics = NamesrvMetrics(self) if self.settings.metrics_port else None
        self.metrics_server: MetricsServer | None = None
        if self.metrics is not None:
            self.server.observer = self.metrics.requests
        self.acl: AccessControl | None = None
        self._acl_reload: Service | None = None
        if self.settings.acl_file is not None:
            try:
                self.acl = AccessControl(self.settings.acl_file, NAMESRV_ADMIN_CODES, namesrv_needs)
            except AclConfigError as e:
                raise ConfigError(str(e)) from None
            self._acl_reload = Service(
                "ACL file reload", self.acl.reload_if_changed, ACL_RELOAD_INTERVAL, logger=log
            )
        self.auth_meta: AuthMetadata | None = None
        """ACL 2.0's users and ACLs, kept beside the KV config (none without one); the AUTH_* requests
        serve them whether or not they are enforced, as at the broker."""
        self.user_access: UserAccess | None = None
        """ACL 2.0 enforcement (``authenticationEnabled``/``authorizationEnabled``)."""
        self._open_auth()
        checks = [c.check for c in (self.acl, self.user_access) if c is not None]
        if checks:
            self.server.before = chained(*checks)  # with both on, a request passes both

    def _open_auth(self) -> None:
        auth, auth_dir = self.settings.auth, self.settings.auth_dir
        if auth_dir is None:
            return
        self.auth_meta = AuthMetadata.open(auth_dir, auth)
        if auth.enabled:
            self.user_access = UserAccess.from_settings(auth, self.auth_meta, cluster="", rules=NAMESRV_RULES)
        AuthProcessor(meta=self.auth_meta, super_caller=self.user_access.is_super_caller
                      if self.user_access is not None else None).register(self.server)

    def _not_ready(self) -> str | None:
        """Why ``/readyz`` says not ready (None: ready)."""
        if not self.port:
            return "starting"
        wait = self.settings.auth_seed_wait_ms
        if (wait and self.settings.auth.enabled and self.kv.get(*AUTH_SEEDED) is None
                and (time.monotonic() - self._started) * 1000 < wait):
            return "waiting for its users (authSeedWaitMs)"
        return None

    @property
    def addr(self) -> str:
        host = self.settings.host
        return f"{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{self.port}"

    async def start(self) -> int:
        """Load the KV config, bind, start the expiry scan; the port bound."""
        self.kv.load()
        if self.controller is not None:
            self.controller.load()
        if self.metrics is not None:
            self.metrics_server = MetricsServer(self.metrics.registry, self._not_ready)
            mport = await self.metrics_server.start(self.settings.host, self.settings.metrics_port)
            log.info("metrics, /healthz and /readyz on http://%s:%d", self.settings.host, mport)
        self.port = await self.server.start(self.settings.host, self.settings.listen_port)
        self._scan.start()
        if self.controller is not None:
            await self.controller.start()
        if self._acl_reload is not None:
            self._acl_reload.start()
        log.info("pyrocketmq namesrv listening on %s:%d", self.settings.host, self.port)
        return self.port

    async def stop(self) -> None:
        await self._scan.stop()
        if self.controller is not None:
            await self.controller.stop()
        if self._acl_reload is not None:
            await self._acl_reload.stop()
        self.port = 0
        await self.server.stop()
        if self.metrics_server is not None:
            await self.metrics_server.stop()
        log.info("pyrocketmq namesrv stopped")

    def scan_expired(self, now_ms: int | None = None) -> list[str]:
        """Remove brokers silent for too long and close their connections; their addresses."""
        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        expired = self.routes.scan_expired(now, self.settings.broker_expiry_ms)
        for live in expired:
            if isinstance(live.channel, Connection):
                live.channel.close("broker registration expired")
        return [live.broker_addr for live in expired]

    def _connection_closed(self, conn: Connection) -> None:
        removed = self.routes.on_channel_closed(conn)
        if removed:
            self.routes.events.info("connection %s closed (%s): brokers removed: %s", conn.remote_addr,
                                    conn.close_reason, ", ".join(removed[:20]))


def _signer(settings: NamesrvSettings) -> Callable[[RemotingCommand], None] | None:
    """How the controller signs its messages to the other instances (:func:`outgoing_account`)."""
    account = outgoing_account(settings.auth, settings.access_key, settings.secret_key)
    return None if account is None else functools.partial(acl_sign, access_key=account[0],
                                                          secret_key=account[1])


# -- command line ---------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pyrocketmq namesrv", description="Run a RocketMQ-compatible name server."
    )
    p.add_argument("-c", "--config", help="namesrv.conf (Java properties with RocketMQ's keys)")
    p.add_argument(
        "--listen-port", type=int, metavar="N", help="port to listen on (overrides listenPort; 0 = any free)"
    )
    p.add_argument("--host", metavar="H", help="address to bind (overrides bindAddress; default 0.0.0.0)")
    p.add_argument("--metrics-port", type=int, metavar="N",
                   help="HTTP port of /metrics, /healthz and /readyz (overrides metricsPort; 0 = off)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a namesrv.conf key, over the file's (repeatable), e.g. --set tls.server.mode=enforcing",
    )
    p.add_argument("-p", "--print-config", action="store_true", help="print the effective settings and exit")
    p.add_argument("--log-level", default=os.environ.get("PYROCKETMQ_LOG_LEVEL", "INFO"))
    return p


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # usage already printed; -h exits 0
        return int(e.code or 0)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        if args.listen_port is not None and not 0 <= args.listen_port <= 65535:
            raise ConfigError(f"--listen-port {args.listen_port}: expected 0..65535")
        if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
            raise ConfigError(f"--metrics-port {args.metrics_port}: expected 0..65535")
        sets = {}
        for item in args.set:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"--set {item!r}: expected KEY=VALUE")
            sets[key.strip()] = value.strip()
        settings = NamesrvSettings.load(args.config, sets, listen_port=args.listen_port, host=args.host,
                                        metrics_port=args.metrics_port)
    except FileNotFoundError:
        parser.print_usage(sys.stderr)
        print(f"pyrocketmq namesrv: error: config file not found: {args.config}", file=sys.stderr)
        return 2
    except (ConfigError, OSError, UnicodeDecodeError) as e:
        parser.print_usage(sys.stderr)
        print(f"pyrocketmq namesrv: error: {e}", file=sys.stderr)
        return 2
    if args.print_config:
        print(settings)
        return 0
    if settings.extra:
        log.info(
            "ignoring namesrv.conf keys this name server does not use: %s", ", ".join(sorted(settings.extra))
        )
    try:
        ns = NameServer(settings)
    except ConfigError as e:
        print(f"pyrocketmq namesrv: error: {e}", file=sys.stderr)
        return 2
    try:
        import uvloop
    except ImportError:
        return asyncio.run(_serve(ns))
    return uvloop.run(_serve(ns))


async def _serve(ns: NameServer) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await ns.start()
    except (OSError, KVConfigError) as e:
        log.error("cannot start the name server: %s", e)
        await ns.stop()
        return 1
    await stop.wait()
    log.info("shutting down")
    await ns.stop()
    return 0
