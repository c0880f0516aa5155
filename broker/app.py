"""The broker's composition root: settings → store → managers → processors → server.

``Broker.start()`` binds the port first (so a ``listenPort=0`` broker knows its address before it
writes any message id), recovers the store, registers the processors, then announces itself to
the name servers. ``main`` is the ``pyrocketmq broker`` command.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import logging
import os
import signal
import sys
import time
from collections.abc import Callable

from pyrocketmq.metrics_server import MetricsServer
from pyrocketmq.remoting.message import pack_host
from pyrocketmq.remoting.properties import ConfigError, read_properties
from pyrocketmq.remoting.server import RemotingServer
from pyrocketmq.server.acl import AclConfigError
from pyrocketmq.server.acl_service import (
    RELOAD_INTERVAL as ACL_RELOAD_INTERVAL,
    AccessControl,
    UserAccess,
    chained,
)
from pyrocketmq.server.auth_metadata import AuthMetadata
from pyrocketmq.server.auth_processor import AuthProcessor
from pyrocketmq.service import Service, Services

from .client_manager import ConsumerManager, ProducerManager
from .consumer_offset import ConsumerOffsetManager
from .delay_service import ScheduleService
from .ha.confirmed import ConfirmedArrivals
from .ha.replica import ReplicaManager
from .ha.service import RECONNECT_DELAY, HAClient, HAServer
from .ha.slave_sync import SlaveSync
from .long_poll import PullHoldService
from .metric_rows import readiness
from .metrics import BrokerMetrics
from .processors.admin import AdminProcessor
from .processors.client import ClientProcessor
from .processors.consumer import ConsumerProcessor
from .processors.offset import OffsetProcessor
from .processors.pull import PullProcessor
from .processors.query import QueryProcessor
from .processors.quota import QuotaGate, QuotaProcessor
from .processors.recall import RecallProcessor
from .processors.replication import ReplicationProcessor
from .processors.send import SendProcessor
from .processors.send_back import SendBackProcessor
from .processors.tools import ToolsProcessor
from .processors.transaction import TransactionProcessor
from .proxy.endpoint import EndpointObservers, GrpcEndpoint
from .quota_metrics import register_quota_metrics
from .quota_store import load_quotas
from .registration import CATCH_UP_INTERVAL, Registrar
from .settings import BrokerRole, BrokerSettings
from .stats import BrokerStats
from .store.message_store import MessageStore
from .subscription_group import SubscriptionGroupManager
from .timer_service import TimerService
from .topic_config import TopicConfigManager
from .transaction_service import TransactionCheckService, TransactionSettings

log = logging.getLogger("pyrocketmq.broker")


class Broker:
    def __init__(self, settings: BrokerSettings) -> None:
        self.settings = settings
        root = settings.store.store_path_root_dir
        config_dir = os.path.join(root, "config")
        os.makedirs(config_dir, exist_ok=True)
        ident = settings.identity
        self.topics = TopicConfigManager(
            os.path.join(config_dir, "topics.json"),
            cluster_name=ident.cluster_name,
            broker_name=ident.broker_name,
            auto_create_topic=settings.topics.auto_create_topic,
            default_queue_nums=settings.topics.default_topic_queue_nums,
            trace_topic=settings.topics.trace_topic,
        )
        self.groups = SubscriptionGroupManager(os.path.join(config_dir, "subscriptionGroup.json"),
                                               auto_create=settings.topics.auto_create_subscription_group)
        self.offsets = ConsumerOffsetManager(os.path.join(config_dir, "consumerOffset.json"))
        self.consumers = ConsumerManager(settings.network.client_channel_expiry_ms)
        self.producers = ProducerManager(settings.network.client_channel_expiry_ms)
        self.holds = PullHoldService()
        self.stats = BrokerStats()
        self.server = RemotingServer("broker",
                                     idle_timeout=settings.network.server_channel_max_idle_s or None,
                                     limits=settings.network.limits, tls=settings.network.tls)
        self.registrar = Registrar(settings, self.topics)
        self.acl: AccessControl | None = None
        """Access control (``aclEnable=true``): the ACL file is read here, so a bad one stops the start."""
        if settings.network.acl_file:
            try:
                self.acl = AccessControl(settings.network.acl_file)
            except AclConfigError as e:
                raise ConfigError(str(e)) from None
        self.auth_meta = AuthMetadata.open(config_dir, settings.auth)
        """ACL 2.0's users and ACLs (served by the AUTH_* requests whether or not they are enforced)."""
        self.user_access: UserAccess | None = None
        """ACL 2.0 enforcement (``authenticationEnabled``/``authorizationEnabled``)."""
        if settings.auth.enabled:
            self.user_access = UserAccess.from_settings(settings.auth, self.auth_meta,
                                                        cluster=ident.cluster_name)
        self.quotas = load_quotas(config_dir)
        """Per-user quotas (:mod:`.quota`), enforced while authentication is on."""
        self.store: MessageStore | None = None
        self.schedule: ScheduleService | None = None
        self.timer: TimerService | None = None
        """Masters: delivery of timer messages (slaves hold the timer queue, a master delivers)."""
        self.transaction_settings = TransactionSettings.from_conf(settings.extra)
        self.transaction_check: TransactionCheckService | None = None
        self.ha_server: HAServer | None = None
        """Masters: the HA port (``listenPort + 1``) slaves replicate from."""
        self.ha_client: HAClient | None = None
        """Slaves: the link to the master's HA port."""
        self.slave_sync: SlaveSync | None = None
        """Slaves: the periodic copy of the master's topics, groups and offsets."""
        self.replica: ReplicaManager | None = None
        """Controller mode: heartbeats to the controller and the role changes it orders."""
        self.arrivals: ConfirmedArrivals | None = None
        """Controller mode: notices for held pulls, given once the in-sync replicas hold the message."""
        self.fast_server: RemotingServer | None = None
        self.grpc: GrpcEndpoint | None = None
        """``grpcListenPort``: the RocketMQ 5 gRPC endpoint (5.x clients), served by this broker's
        processors."""
        self.store_host = b""
        self.port = 0
        self.boot_ms = int(time.time() * 1000)
        self.services = Services()
        """The broker's periodic loops, started once it serves and stopped first on shutdown."""
        self.metrics = BrokerMetrics(self) if settings.network.metrics_port else None
        self.metrics_server: MetricsServer | None = None
        self.serving = False
        """True from the moment the recovered broker accepts connections until it stops."""

    @property
    def addr(self) -> str:
        return self.registrar.addr  # the address it registers: brokerIP1 and the bound port

    async def start(self) -> None:
        """Metrics first, bind, recover the store, wire the processors, serve, register, run the loops."""
        s = self.settings
        if self.metrics is not None:  # first: /healthz answers while the store recovers
            self.server.observer = self.metrics.requests
            register_quota_metrics(self.metrics.registry, self.quotas.table, s.identity)
            self.metrics_server = MetricsServer(self.metrics.registry, self.not_ready_reason)
            port = await self.metrics_server.start(s.network.bind_address, s.network.metrics_port)
            log.info("metrics, /healthz and /readyz on http://%s:%d", s.network.bind_address, port)
        # Bind first (a listenPort=0 broker needs its port for message ids), accept once recovered.
        self.port = await self.server.start(s.network.bind_address, s.network.listen_port, serve=False)
        self.store_host = pack_host(s.network.broker_ip, self.port)
        self.registrar.port = self.port
        store = await self._open_store()
        self._register_processors(store)
        checks = [c.check for c in (self.acl, self.user_access) if c is not None]
        if checks:
            self.server.before = chained(*checks)
        self.server.on_connection_closed(self.client_processor.connection_closed)
        await self.server.serve()
        await self._start_fast_channel()
        if s.network.grpc_port is not None:
            self.grpc = GrpcEndpoint(s, handlers=self.server.handlers, store=store, topics=self.topics,
                                     groups=self.groups, offsets=self.offsets, producers=self.producers,
                                     client=self.registrar.client,
                                     acl=self.acl.validator if self.acl is not None else None,
                                     users=self.user_access,
                                     quotas=self.quotas.table if s.auth.authentication_enabled else None,
                                     observers=EndpointObservers(self.metrics.grpc_call,
                                                                 self.metrics.grpc_receive_latency.observe)
                                     if self.metrics is not None else None)
            await self.grpc.start(self.addr)
        self.serving = True
        n = await self.registrar.register_all()
        log.info(
            "pyrocketmq broker %s (%s, cluster %s) listening on %s; registered with %d of %d name servers; "
            "store at %s",
            s.identity.broker_name,
            s.identity.role.value,
            s.identity.cluster_name,
            self.addr,
            n,
            len(s.network.namesrv_addrs),
            s.store.store_path_root_dir,
        )
        self._start_services()

    async def _open_store(self) -> MessageStore:
        """Load the configs, recover the store (off the loop), open the HA side and the delay queues."""
        s = self.settings
        self.topics.load()
        self.groups.load()
        self.offsets.load()
        store = MessageStore(s.store, (s.network.broker_ip, self.port))
        await asyncio.get_running_loop().run_in_executor(None, store.load)
        store.on_dispatch = self._on_dispatch
        if self.metrics is not None:
            self.metrics.instrument(store)
        store.start()
        self.store = store
        controller_mode = s.controller.enabled
        if s.identity.role == BrokerRole.SLAVE:  # controller mode: every replica starts as a slave
            self.ha_client = HAClient(store, self._ha_master_addr,
                                      s.identity.replica_id if controller_mode else None,
                                      tls_context=s.network.peer_tls.context())
        if s.identity.role != BrokerRole.SLAVE or controller_mode:
            self.ha_server = HAServer(store, min_in_sync=s.controller.min_in_sync_replicas, tls=s.network.tls)
            await self.ha_server.start(s.network.bind_address, self.port + 1)
        self.topics.persist()
        self.topics.on_change = self.registrar.register_soon
        self.schedule = ScheduleService(
            store, os.path.join(s.store.config_dir, "delayOffset.json"), s.store.delay_levels_ms,
            flush_interval_ms=s.store.flush_delay_offset_interval,
        )
        self.schedule.load()
        if (s.identity.role != BrokerRole.SLAVE or controller_mode) and s.store.timer_wheel_enable:
            self.timer = TimerService(store, os.path.join(s.store.config_dir, "timerCheckpoint.json"),
                                      flush_interval_ms=s.store.flush_delay_offset_interval)
            self.timer.load()
        if self.ha_client is not None:
            self.slave_sync = SlaveSync(
                registrar=self.registrar, topics=self.topics, groups=self.groups, offsets=self.offsets,
                schedule=self.schedule, interval=2.0 if controller_mode else 10.0,
                timer=self.timer if controller_mode else None,
            )
        if controller_mode:
            assert self.ha_server is not None and self.ha_client is not None
            self.replica = ReplicaManager(s, store, self.registrar, self.ha_server, self.ha_client,
                                          start_master=self._start_master_services,
                                          stop_master=self._stop_master_services)
            self.replica.load()
            self.arrivals = ConfirmedArrivals(self.replica.readable_offset, store.get_max_phy_offset,
                                              self._tell_readers)
            store.read_limit = self.replica.readable_offset
            self.ha_server.table.on_progress = self.arrivals.release
            self.registrar.controller_mode = True
            self.registrar.role_fresh = self._role_fresh
        return store

    def _register_processors(self, store: MessageStore) -> None:
        """Every processor, each given the services it uses; those that read across the broker's
        tables take the whole :class:`~.processors.services.BrokerServices` set."""
        settings, topics, groups, offsets = self.settings, self.topics, self.groups, self.offsets
        consumers, producers, stats = self.consumers, self.producers, self.stats
        self.client_processor = ClientProcessor(topics=topics, groups=groups, consumers=consumers,
                                                producers=producers,
                                                property_filter=settings.pull.property_filter)
        transactions = TransactionProcessor(settings=settings, topics=topics, producers=producers,
                                            store=store, stats=stats, store_host=self.store_host)
        ts = self.transaction_settings
        self.transaction_check = TransactionCheckService(
            store, offsets, transactions.send_check, interval_ms=ts.check_interval_ms,
            timeout_ms=ts.timeout_ms, check_max=ts.check_max, ensure_topic=transactions.ensure_topic,
        )
        processors = (
            SendProcessor(settings=settings, topics=topics, groups=groups, offsets=offsets,
                          consumers=consumers, store=store, stats=stats, store_host=self.store_host,
                          ha_server=self.ha_server, publish_routes=self.registrar.register_all),
            SendBackProcessor(settings=settings, topics=topics, groups=groups, offsets=offsets,
                              consumers=consumers, store=store, stats=stats,
                              publish_routes=self.registrar.register_all),
            PullProcessor(settings=settings, topics=topics, groups=groups, offsets=offsets,
                          consumers=consumers, store=store, stats=stats, holds=self.holds),
            OffsetProcessor(offsets=offsets, store=store, topics=topics),
            self.client_processor,
            ConsumerProcessor(settings=settings, topics=topics, groups=groups, offsets=offsets,
                              consumers=consumers, store=store, stats=stats),
            AdminProcessor(settings=settings, topics=topics, groups=groups, offsets=offsets,
                           consumers=consumers, store=store, stats=stats, schedule=self.schedule,
                           boot_ms=self.boot_ms),
            QueryProcessor(store=store),
            ToolsProcessor(settings=settings, topics=topics, groups=groups, offsets=offsets,
                           consumers=consumers, store=store, stats=stats, producers=producers),
            transactions,
            ReplicationProcessor(offsets=offsets, schedule=self.schedule, timer=self.timer),
            RecallProcessor(settings=settings, topics=topics, store=store),
            AuthProcessor(meta=self.auth_meta, super_caller=self.user_access.is_super_caller
                          if self.user_access is not None else None),
            QuotaProcessor(quotas=self.quotas, super_caller=self.user_access.is_super_caller
                           if self.user_access is not None else None),
        )
        for processor in processors:
            processor.register(self.server)
        if settings.auth.authentication_enabled:  # the user of a request is known: its quota applies
            gate = QuotaGate(self.quotas.table, skip=settings.auth.authentication_whitelist)
            gate.install(self.server.handlers)

    def _start_services(self) -> None:
        s = self.settings
        add = self.services.add
        if self.replica is not None:
            add(Service("controller heartbeat", self.replica.round, s.controller.heartbeat_interval_ms / 1000,
                        first_wait=False))
        add(Service("name-server registration", self.registrar.register_all,
                    s.network.register_interval_ms / 1000))
        add(Service("name-server catch-up", self.registrar.catch_up, CATCH_UP_INTERVAL))
        if self.acl is not None:
            add(Service("ACL file reload", self.acl.reload_if_changed, ACL_RELOAD_INTERVAL))
        if self.ha_client is not None and self.slave_sync is not None:
            add(Service("HA link to the master", self.ha_client.connect_round, RECONNECT_DELAY,
                        first_wait=False))
            add(Service("config sync from the master", self.slave_sync.sync_round, 1.0, first_wait=False,
                        chooses_wait=True))
        add(Service("consumer offset persist", self.offsets.persist, 5.0))
        add(Service("traffic stats snapshots", self.stats.sample, 10.0))
        # every 10 s as in RocketMQ, more often only when the expiry itself is shorter
        add(Service("client expiry scan", self.client_processor.scan_expired,
                    min(10.0, s.network.client_channel_expiry_ms / 2000)))
        if self.grpc is not None:
            add(Service("gRPC endpoint announcement", self.grpc.announce,
                        s.network.register_interval_ms / 1000, first_wait=False))
            add(Service("gRPC client expiry", self.grpc.expire_clients, 10.0))
            add(Service("POP leases and state", self.grpc.renew_and_persist, 1.0))
        self.services.start()
        if s.identity.role != BrokerRole.SLAVE:
            self._start_master_services()

    def _start_master_services(self) -> None:
        """What only a master runs: delay levels, timer delivery, transaction check-backs."""
        assert self.schedule is not None and self.transaction_check is not None
        self.schedule.start()
        self.transaction_check.start()
        if self.timer is not None:
            self.timer.start()

    async def _stop_master_services(self) -> None:
        for service in (self.schedule, self.transaction_check, self.timer):
            if service is not None:
                await service.stop()

    def _role_fresh(self) -> bool:
        """Controller mode: a controller confirmed the role within the controller's timeout."""
        assert self.replica is not None
        return time.monotonic() - self.replica.confirmed_at < 3.0

    async def _start_fast_channel(self) -> None:
        """RocketMQ's "VIP channel" on ``listenPort - 2``: the same handlers on a second port. Apache
        slaves sync configs from their master there, whatever the client-side VIP setting says."""
        if self.port < 3:
            return
        fast = RemotingServer("broker-fast", self.server.handlers, idle_timeout=self.server.idle_timeout,
                              limits=self.server.limits, tls=self.server.tls, before=self.server.before)
        fast.on_connection_closed(self.client_processor.connection_closed)
        try:
            await fast.start(self.settings.network.bind_address, self.port - 2)
        except OSError as e:
            log.warning("fast channel port %d unavailable (Apache slaves cannot sync configs): %s",
                        self.port - 2, e)
            return
        self.fast_server = fast

    def not_ready_reason(self) -> str | None:
        """``None`` when ready (``/readyz``): store recovered and serving, registered with a name server."""
        return readiness(self.serving, len(self.settings.network.namesrv_addrs),
                         len(self.registrar.registered))

    def _on_dispatch(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None,
                     properties: dict[str, str] | None = None) -> None:
        if self.arrivals is not None:  # controller mode: readers hear of it once the in-sync slaves hold it
            self.arrivals.arrived(topic, queue_id, max_offset, tags_code)
        else:
            self._tell_readers(topic, queue_id, max_offset, tags_code)
        if self.ha_server is not None:
            self.ha_server.notify()

    def _tell_readers(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None) -> None:
        self.holds.notify(topic, queue_id, max_offset, tags_code)
        if self.grpc is not None:
            self.grpc.pop.wake(topic)

    def _ha_master_addr(self) -> str | None:
        if self.replica is not None:
            return self.replica.master_ha
        return self.settings.network.ha_master_address or self.registrar.ha_server_addr

    async def stop(self) -> None:
        """Stop serving and every loop, then persist and close: each step runs whatever failed before
        it (a failure is logged), so offsets, configs and the store are always written and closed."""
        self.serving = False
        steps: list[tuple[str, Callable[[], object]]] = [
            ("background services", self.services.stop),
            ("held pulls", self.holds.wake_all),
            # before the name-server client closes: it withdraws the endpoint's announcement
            ("the gRPC endpoint", self.grpc.stop if self.grpc is not None else _nothing),
            ("unregistering from the name servers", self.registrar.unregister_all),
            ("the registration client", self.registrar.close),
            ("the slave's sync client", self.slave_sync.close if self.slave_sync is not None else _nothing),
            ("the controller client", self.replica.close if self.replica is not None else _nothing),
            ("the remoting server", self.server.stop),
            ("the fast channel", self.fast_server.stop if self.fast_server is not None else _nothing),
            ("the HA server", self.ha_server.stop if self.ha_server is not None else _nothing),
            ("the delay service", self.schedule.stop if self.schedule is not None else _nothing),
            ("the timer service", self.timer.stop if self.timer is not None else _nothing),
            ("the transaction check",
             self.transaction_check.stop if self.transaction_check is not None else _nothing),
            # only once loaded (the store opens after the configs): never write empty tables over real files
            ("persisting consumer offsets", self._loaded(lambda: self.offsets.persist(force=True))),
            ("persisting topic configs", self._loaded(self.topics.persist)),
            ("persisting subscription groups", self._loaded(self.groups.persist)),
            ("closing the store", self._close_store),
            ("the metrics server", self.metrics_server.stop if self.metrics_server is not None else _nothing),
        ]
        failed = []
        for what, fn in steps:
            try:
                result = fn()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                failed.append(what)
                log.exception("stopping broker: %s failed; going on with the rest", what)
        log.info("broker %s stopped%s", self.settings.identity.broker_name,
                 f" ({len(failed)} step(s) failed: {', '.join(failed)})" if failed else "")

    def _loaded(self, persist: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            if self.store is not None:
                persist()

        return run

    async def _close_store(self) -> None:
        if self.store is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.store.shutdown)


def _nothing() -> None:
    return None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pyrocketmq broker", description="Run a RocketMQ-compatible broker.")
    p.add_argument("-c", "--config", help="broker.conf (Java properties with RocketMQ's keys)")
    p.add_argument("-n", "--namesrv-addr", help="name servers, host:port;host:port (overrides namesrvAddr)")
    p.add_argument("-p", "--print-config", action="store_true", help="print the effective settings and exit")
    p.add_argument("--log-level", default=os.environ.get("PYROCKETMQ_LOG_LEVEL", "INFO"))
    return p


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    conf: dict[str, str] = {}
    try:
        if args.config:
            conf = read_properties(args.config)
        if args.namesrv_addr:
            conf["namesrvAddr"] = args.namesrv_addr
        settings = BrokerSettings.from_conf(conf)
        TransactionSettings.from_conf(settings.extra)
    except FileNotFoundError:
        parser.print_usage(sys.stderr)
        print(f"pyrocketmq broker: error: config file not found: {args.config}", file=sys.stderr)
        return 2
    except (ConfigError, ValueError, OSError) as e:
        parser.print_usage(sys.stderr)
        print(f"pyrocketmq broker: error: {e}", file=sys.stderr)
        return 2
    if args.print_config:
        print(settings)
        return 0
    unused = sorted(k for k in settings.extra if k not in TransactionSettings.KEYS)
    if unused:
        log.info("ignoring broker.conf keys this broker does not use: %s", ", ".join(unused))
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    return asyncio.run(_serve(Broker(settings)))


async def _serve(broker: Broker) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await broker.start()
    except OSError as e:
        log.error("cannot start the broker: %s", e)
        return 1
    await stop.wait()
    log.info("shutting down")
    await broker.stop()
    return 0
