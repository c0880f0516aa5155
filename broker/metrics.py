"""The broker's Prometheus metrics: read from the broker's state when Prometheus scrapes.

Nothing here runs per message. The send and pull paths already bump :class:`~.stats.BrokerStats`;
the transport tells a :class:`~pyrocketmq.metrics.RequestRecorder` about each request; store puts
and flushes feed two :class:`~pyrocketmq.metrics.LatencyRecorder`. Everything else (offsets, lag,
disk, holds, connections) is read from the managers at scrape time by :func:`broker_families`.

Every series carries ``cluster`` and ``broker`` (the brokerName); per-topic series add ``topic``,
per-queue ones ``queue``, per-group ones ``group``. A group's data (queue offsets, consumer offsets
and lag, retry/DLQ and delayed counts) comes from its master only: a slave holds copies of the same
queues and offsets, and a dashboard summing over pods would count them twice. A slave exports its
own health (readiness, requests, store, disk, connections). Those sets are bounded by the broker's topic
and group configuration; no label ever holds a message key, a client id or an address.

=========================================================  =======================================
metric                                                     meaning
=========================================================  =======================================
``pyrocketmq_broker_info``                                 1, with ``broker_id``, ``role``, ``version``
``pyrocketmq_broker_queue_max_offset{topic,queue}``        next offset of each consume queue
``pyrocketmq_broker_queue_min_offset{topic,queue}``        first offset still stored
``pyrocketmq_broker_consumer_offset{group,topic,queue}``   committed offset
``pyrocketmq_broker_consumer_lag_messages{...}``           max offset − committed offset (≥ 0)
``pyrocketmq_broker_retry_messages_total{group}``          messages ever put in ``%RETRY%<group>``
``pyrocketmq_broker_dlq_messages_total{group}``            messages ever put in ``%DLQ%<group>``
``pyrocketmq_broker_scheduled_messages{level}``            delayed messages not yet delivered
``pyrocketmq_broker_timer_messages``                       timer messages waiting for their time
``pyrocketmq_broker_timer_delivered_total``                timer messages delivered since start
``pyrocketmq_broker_commitlog_size_bytes``                 commitlog bytes retained
``pyrocketmq_broker_commitlog_max_offset_bytes``           commitlog write position (bytes ever written)
``pyrocketmq_broker_disk_usage_ratio``                     used / size of the commitlog's disk
``pyrocketmq_broker_replication_lag_bytes``                master: bytes its best slave has not acknowledged
``pyrocketmq_broker_master_epoch``                         controller mode: the epoch its log follows
``pyrocketmq_broker_sync_state_set_size``                  controller mode, master: its in-sync set,
                                                           itself included
``pyrocketmq_broker_held_pulls``                           pulls held by long polling
``pyrocketmq_broker_connections``                          open remoting connections
``pyrocketmq_broker_namesrv_registered``                   name servers the last registration reached
``pyrocketmq_broker_ready``                                1 when ``/readyz`` answers 200
``pyrocketmq_broker_store_put_duration_seconds``           store put latency (histogram)
``pyrocketmq_broker_store_flush_duration_seconds{kind}``   commitlog / consume-queue flush latency
=========================================================  =======================================

Under Apache RocketMQ 5's names (``BrokerMetricsConstant``; labels ``cluster``, ``node_type="broker"``,
``node_id`` = the brokerName, then Apache's own), so dashboards and alert rules written for Apache
read this broker too; the traffic counters exist under these names only:

``rocketmq_messages_in_total{topic,message_type}``                           messages stored (``normal``,
                                                                             ``fifo``, ``delay``,
                                                                             ``transaction``)
``rocketmq_throughput_in_total{topic,message_type}``                         their bytes
``rocketmq_messages_out_total{topic,consumer_group}``                        messages handed out by pulls
``rocketmq_throughput_out_total{topic,consumer_group}``                      their bytes
``rocketmq_consumer_lag_messages{topic,consumer_group,is_retry,is_system}``  lag per group and topic (master)
``rocketmq_consumer_ready_messages{...}``, ``..._inflight_messages{...}``    not pulled yet; pulled, not
                                                                             committed
``rocketmq_consumer_queueing_latency{...}``, ``..._lag_latency{...}``        ms the oldest not pulled / not
                                                                             consumed waited
``rocketmq_producer_connections{language,version,protocol_type}``            producer connections
``rocketmq_consumer_connections{consumer_group,language,version,...}``       consumer connections
``rocketmq_rpc_latency{protocol_type,request_code,response_code}``           requests answered: latency (ms
                                                                             histogram), count
``rocketmq_message_size{topic,message_type}``                                stored sizes (histogram, bytes)
``rocketmq_send_to_dlq_messages_total{topic,consumer_group,is_system}``      dead-lettered since start
``rocketmq_commit_messages_total{topic}``                                    transactions committed
``rocketmq_rollback_messages_total{topic}``                                  transactions rolled back
``rocketmq_topic_number``, ``rocketmq_consumer_group_number``                topics and groups held
``rocketmq_storage_size``, ``..._flush_behind_bytes``                        disk used, unflushed bytes
``rocketmq_storage_message_reserve_time``                                    oldest message age (ms)
===========================================================================  ================================
=======
- ``rocketmq_messages_in_total{topic,message_type}``: messages stored (``normal``, ``fifo``, ``delay``,
  ``transaction``)
- ``rocketmq_throughput_in_total{topic,message_type}``: their bytes
- ``rocketmq_messages_out_total{topic,consumer_group}``: messages handed out by pulls
- ``rocketmq_throughput_out_total{topic,consumer_group}``: their bytes
- ``rocketmq_consumer_lag_messages{topic,consumer_group,is_retry,is_system}``: lag per group and topic
  (master)
- ``rocketmq_consumer_ready_messages{...}``, ``..._inflight_messages{...}``: not pulled yet; pulled, not
  committed
- ``rocketmq_consumer_queueing_latency{...}``, ``..._lag_latency{...}``: ms the oldest not pulled / not
  consumed waited
- ``rocketmq_producer_connections{language,version,protocol_type}``: producer connections
- ``rocketmq_consumer_connections{consumer_group,language,version,consume_mode,...}``: consumer
  connections
- ``rocketmq_rpc_latency{protocol_type,request_code,response_code}``: requests answered: latency (ms
  histogram), count
- ``rocketmq_message_size{topic,message_type}``: stored sizes (histogram, bytes)
- ``rocketmq_send_to_dlq_messages_total{topic,consumer_group,is_system}``: dead-lettered since start
- ``rocketmq_commit_messages_total{topic}``, ``rocketmq_rollback_messages_total{topic}``: transactions
  ended
- ``rocketmq_topic_number``, ``rocketmq_consumer_group_number``: topics and groups held
- ``rocketmq_storage_size``, ``..._flush_behind_bytes``, ``..._message_reserve_time``: disk used,
  unflushed bytes, oldest message age (ms)

Retry and DLQ counters are the max offsets of those topics' queues: they survive restarts, and
they exist (at 0) for every subscription group the broker knows, so ``increase()`` sees the first
message arrive.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

import pyrocketmq
from pyrocketmq.metrics import (
    RPC_LATENCY_BUCKETS,
    LatencyRecorder,
    RequestRecorder,
    ScrapeCollector,
    histogram_family,
)
from pyrocketmq.remoting.command import language_name, version_desc
from pyrocketmq.remoting.names import (
    DLQ_GROUP_TOPIC_PREFIX as DLQ_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX as RETRY_PREFIX,
    SCHEDULE_TOPIC,
    SYSTEM_GROUPS,
    TIMER_TOPIC,
)

from .metric_rows import (
    ConsumerState,
    consumer_states,
    lag_rows,
    readiness,
    scheduled_waiting,
    special_topic_totals,
    timed,
)
from .settings import BrokerRole
from .store.host import disk_used_bytes

if TYPE_CHECKING:
    from pyrocketmq.remoting.server import RemotingServer

    from .client_manager import ConsumerManager, ProducerManager
    from .consumer_offset import ConsumerOffsetManager
    from .delay_service import ScheduleService
    from .ha.replica import ReplicaManager
    from .ha.service import HAServer
    from .long_poll import PullHoldService
    from .proxy.endpoint import GrpcEndpoint
    from .registration import Registrar
    from .settings import BrokerSettings
    from .stats import BrokerStats
    from .store.message_store import MessageStore
    from .subscription_group import SubscriptionGroupManager
    from .timer_service import TimerService
    from .topic_config import TopicConfigManager


PREFIX = "pyrocketmq_broker"


# -- the broker's metrics ----------------------------------------------------------------------------


class BrokerView(Protocol):
    """What the metrics read of a broker (``Broker`` has it all; metrics never change any of it)."""

    @property
    def settings(self) -> BrokerSettings: ...
    @property
    def stats(self) -> BrokerStats: ...
    @property
    def store(self) -> MessageStore | None: ...
    @property
    def registrar(self) -> Registrar: ...
    @property
    def holds(self) -> PullHoldService: ...
    @property
    def server(self) -> RemotingServer: ...
    @property
    def consumers(self) -> ConsumerManager: ...
    @property
    def producers(self) -> ProducerManager: ...
    @property
    def topics(self) -> TopicConfigManager: ...
    @property
    def offsets(self) -> ConsumerOffsetManager: ...
    @property
    def groups(self) -> SubscriptionGroupManager: ...
    @property
    def schedule(self) -> ScheduleService | None: ...
    @property
    def timer(self) -> TimerService | None: ...
    @property
    def ha_server(self) -> HAServer | None: ...
    @property
    def replica(self) -> ReplicaManager | None: ...
    @property
    def grpc(self) -> GrpcEndpoint | None: ...


class BrokerMetrics:
    """The recorders and the registry of one broker; :meth:`instrument` wires them in."""

    def __init__(self, broker: BrokerView) -> None:
        self.broker = broker
        self.requests = RequestRecorder(
            PREFIX, bounds=RPC_LATENCY_BUCKETS
        )  # exported as rocketmq_rpc_latency
        self.put_latency = LatencyRecorder()
        self.flush_latency: dict[str, LatencyRecorder] = {
            "commitlog": LatencyRecorder(),
            "consumequeue": LatencyRecorder(),
        }
        self.grpc_calls: collections.Counter[tuple[str, str]] = collections.Counter()
        """Answered 5.x gRPC calls by (RPC, status code name)."""
        self.grpc_receive_latency = LatencyRecorder()
        """ReceiveMessage calls that handed out messages: request to answer (long polling included)."""
        self.registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.registry.register(ScrapeCollector(self.families))

    def instrument(self, store: MessageStore) -> None:
        """Time the store's puts (the instance's methods are wrapped: no cost when metrics are off)
        and its flushes (the flush thread's hook)."""
        store.put_message = timed(store.put_message, self.put_latency)  # type: ignore[method-assign]  # wrapped on purpose: no cost when metrics are off
        store.put_batch = timed(store.put_batch, self.put_latency)  # type: ignore[method-assign]  # as above
        store.flush_service.on_flush = self._on_flush

    def grpc_call(self, rpc: str, code: str) -> None:
        self.grpc_calls[(rpc, code)] += 1

    def _on_flush(self, kind: str, seconds: float) -> None:
        rec = self.flush_latency.get(kind)
        if rec is not None:
            rec.observe(seconds)

    def families(self) -> Iterator[Metric]:
        yield from broker_families(self.broker, self)


class _Families:
    """Builds families named ``pyrocketmq_broker_<name>`` labelled with the broker's cluster and name."""

    def __init__(self, broker: BrokerView) -> None:
        ident = broker.settings.identity
        self.base = ["cluster", "broker"]
        self.ident = [ident.cluster_name, ident.broker_name]

    def gauge(self, name: str, doc: str, labels: Iterable[str] = ()) -> GaugeMetricFamily:
        return GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=self.base + list(labels))

    def counter(self, name: str, doc: str, labels: Iterable[str] = ()) -> CounterMetricFamily:
        return CounterMetricFamily(f"{PREFIX}_{name}", doc, labels=self.base + list(labels))

    def one(self, name: str, doc: str, value: float) -> GaugeMetricFamily:
        g = self.gauge(name, doc)
        g.add_metric(self.ident, value)
        return g


def broker_families(broker: BrokerView, metrics: BrokerMetrics) -> Iterator[Metric]:
    """Every broker metric family, read from ``broker`` now (called on the loop thread)."""
    f = _Families(broker)
    yield from _health_families(broker, metrics, f)
    yield from apache_families(broker, metrics)
    store = broker.store
    if store is None:
        return
    yield from _queue_families(broker, store, f)
    yield from _store_families(broker, store, f)


class _Apache:
    """Families under Apache RocketMQ 5's names (``BrokerMetricsConstant``), with its base labels
    ``cluster``, ``node_type`` (``broker``) and ``node_id`` (the brokerName)."""

    def __init__(self, broker: BrokerView) -> None:
        ident = broker.settings.identity
        self.base = ["cluster", "node_type", "node_id"]
        self.ident = [ident.cluster_name, "broker", ident.broker_name]

    def gauge(self, name: str, doc: str, labels: Iterable[str] = ()) -> GaugeMetricFamily:
        return GaugeMetricFamily(f"rocketmq_{name}", doc, labels=self.base + list(labels))

    def counter(self, name: str, doc: str, labels: Iterable[str] = ()) -> CounterMetricFamily:
        return CounterMetricFamily(f"rocketmq_{name}", doc, labels=self.base + list(labels))


def _is_system_group(group: str) -> str:
    return "true" if group in SYSTEM_GROUPS else "false"


def apache_families(broker: BrokerView, metrics: BrokerMetrics) -> Iterator[Metric]:
    """Traffic, requests, lag, connections and counts under Apache RocketMQ 5's metric names and
    labels, so its users' dashboards and alert rules read this broker as they read theirs."""
    a, stats = _Apache(broker), broker.stats
    yield from metrics.requests.apache_families(dict(zip(a.base, a.ident, strict=True)))
    for name, doc, table, label in (
        ("messages_in", "Messages stored by sends and send-backs.", stats.put_by_topic, "message_type"),
        ("throughput_in", "Bytes stored by sends and send-backs.", stats.put_bytes_by_topic, "message_type"),
        ("messages_out", "Messages handed to consumers by pulls.", stats.get_by_topic, "consumer_group"),
        ("throughput_out", "Bytes handed to consumers by pulls.", stats.get_bytes_by_topic, "consumer_group"),
    ):
        family = a.counter(name, doc, ["topic", label])
        for (topic, value_label), value in sorted(dict(table).items()):
            family.add_metric(a.ident + [topic, value_label], value)
        yield family
    yield histogram_family(
        "rocketmq_message_size",
        "Stored size of the messages, in bytes.",
        [*a.base, "topic", "message_type"],
        [((*a.ident, topic, kind), rec) for (topic, kind), rec in sorted(dict(stats.sizes).items())],
    )
    dlq = a.counter(
        "send_to_dlq_messages",
        "Messages sent to a group's dead-letter queue since the broker started.",
        ["topic", "consumer_group", "is_system"],
    )
    for (group, topic), n in sorted(dict(stats.dead_letter_by_group).items()):
        dlq.add_metric(a.ident + [topic, group, _is_system_group(group)], n)
    yield dlq
    for name, doc, by_topic in (
        ("commit_messages", "Transactional messages committed.", stats.commits_by_topic),
        ("rollback_messages", "Transactional messages rolled back.", stats.rollbacks_by_topic),
    ):
        family = a.counter(name, doc, ["topic"])
        for topic, n in sorted(dict(by_topic).items()):
            family.add_metric(a.ident + [topic], n)
        yield family
    topics = a.gauge("topic_number", "Topics this broker holds.")
    topics.add_metric(a.ident, len(broker.topics.table))
    yield topics
    groups = a.gauge("consumer_group_number", "Subscription groups this broker knows.")
    groups.add_metric(a.ident, len(broker.groups.table))
    yield groups
    yield from _connection_families(broker, a)
    store = broker.store
    if store is None:
        return
    for name, doc, value in (
        (
            "storage_size",
            "Bytes used on the filesystem holding the store.",
            disk_used_bytes(store.settings.store_path_root_dir),
        ),
        (
            "storage_flush_behind_bytes",
            "Commitlog bytes written and not yet flushed.",
            store.commit_log.flush_behind_bytes(),
        ),
    ):
        g = a.gauge(name, doc)
        g.add_metric(a.ident, value)
        yield g
    g = a.gauge("storage_message_reserve_time", "Milliseconds since the oldest stored message was stored.")
    if (earliest := store.commit_log.earliest_store_time()) > 0:
        g.add_metric(a.ident, max(0, int(time.time() * 1000) - earliest))
    yield g
    if broker.settings.identity.role is not BrokerRole.SLAVE:
        yield from _apache_consumer_families(broker, store, a)


def _connection_families(broker: BrokerView, a: _Apache) -> Iterator[Metric]:
    """Connected producers and consumers by language and version (and the consumers' group and mode)."""
    producers: collections.Counter[tuple[str, str]] = collections.Counter()
    for channels in broker.producers.groups.values():
        for ch in channels.values():
            producers[(language_name(ch.language).lower(), version_desc(ch.version).lower())] += 1
    g = a.gauge("producer_connections", "Producer connections.", ["language", "version", "protocol_type"])
    for (language, version), n in sorted(producers.items()):
        g.add_metric(a.ident + [language, version, "remoting"], n)
    yield g
    g = a.gauge("consumer_connections", "Consumer connections.",
                ["consumer_group", "language", "version", "consume_mode", "protocol_type", "is_system"])
    consumers: collections.Counter[tuple[str, str, str, str]] = collections.Counter()
    for group, info in broker.consumers.groups.items():
        mode = "push" if info.consume_type == "CONSUME_PASSIVELY" else "pull"
        for ch in info.channels.values():
            consumers[
                (group, language_name(ch.language).lower(), version_desc(ch.version).lower(), mode)
            ] += 1
    for (group, language, version, mode), n in sorted(consumers.items()):
        g.add_metric(a.ident + [group, language, version, mode, "remoting", _is_system_group(group)], n)
    yield g


def _apache_consumer_families(broker: BrokerView, store: MessageStore, a: _Apache) -> Iterator[Metric]:
    """Lag, ready and in-flight messages and their ages, per group and topic (Apache's granularity;
    per queue: ``pyrocketmq_broker_consumer_lag_messages``). A master's numbers: a slave's copy is
    left out. 5.x consumers' messages in flight are the POP leases."""
    maxes = {(cq.topic, cq.queue_id): cq.max_offset for cq in store.consume_queues()}
    offsets = broker.offsets
    states = consumer_states(offsets.table, offsets.pulled, lambda t, q: maxes.get((t, q), 0),
                             store.get_message_store_timestamp, int(time.time() * 1000))
    grpc = broker.grpc
    for key, n in (grpc.pop.inflight_by_group() if grpc is not None else {}).items():
        states.setdefault(key, ConsumerState()).inflight += n
    labels = ["topic", "consumer_group", "is_retry", "is_system"]
    families = [
        (
            a.gauge(
                "consumer_lag_messages", "Messages not consumed yet (max offset - committed offset).", labels
            ),
            "lag",
        ),
        (a.gauge("consumer_ready_messages", "Messages stored and not pulled yet.", labels), "ready"),
        (
            a.gauge(
                "consumer_inflight_messages",
                "Messages pulled (or received) and not committed (or acknowledged) yet.",
                labels,
            ),
            "inflight",
        ),
        (
            a.gauge(
                "consumer_queueing_latency",
                "Milliseconds the oldest message not pulled yet has waited.",
                labels,
            ),
            "queueing_ms",
        ),
        (
            a.gauge(
                "consumer_lag_latency", "Milliseconds the oldest message not consumed yet has waited.", labels
            ),
            "lag_ms",
        ),
    ]
    for (group, topic), state in sorted(states.items()):
        values = a.ident + [
            topic,
            group,
            "true" if topic.startswith(RETRY_PREFIX) else "false",
            _is_system_group(group),
        ]
        for family, attr in families:
            family.add_metric(values, getattr(state, attr))
    for family, _ in families:
        yield family


def _health_families(broker: BrokerView, metrics: BrokerMetrics, f: _Families) -> Iterator[Metric]:
    """Identity, readiness, connections, the 5.x front, store latencies."""
    s, ident = broker.settings, f.ident
    info = f.gauge(
        "info", "Always 1; the broker's id, role and version as labels.", ["broker_id", "role", "version"]
    )
    info.add_metric(ident + [str(s.identity.broker_id), s.identity.role.value, pyrocketmq.__version__], 1)
    yield info
    registered = len(broker.registrar.registered)
    ready = readiness(broker.store is not None, len(s.network.namesrv_addrs), registered)
    yield f.one("ready", "1 when the broker is ready (store recovered, registered with a name server).",
                1 if ready is None else 0)
    yield f.one("namesrv_registered", "Name servers that accepted the last registration.", registered)
    yield f.one("held_pulls", "Pull requests held by long polling.", broker.holds.held_count)
    yield f.one(
        "connections",
        "Open remoting connections (clients, other brokers, tools).",
        len(broker.server.connections),
    )
    yield from _grpc_families(broker, metrics, f)
    yield histogram_family(
        f"{PREFIX}_store_put_duration_seconds",
        "Time to append a message (or a batch) to the store.",
        f.base,
        [(ident, metrics.put_latency)],
    )
    yield histogram_family(
        f"{PREFIX}_store_flush_duration_seconds",
        "Time of one flush of the commitlog or of the consume queues (fsync).",
        f.base + ["kind"],
        [((*ident, k), r) for k, r in sorted(metrics.flush_latency.items())],
    )


def _grpc_families(broker: BrokerView, metrics: BrokerMetrics, f: _Families) -> Iterator[Metric]:
    """The 5.x endpoint: calls by RPC and status, clients, receive latency (its POP messages in
    flight: ``rocketmq_consumer_inflight_messages``)."""
    ident = f.ident
    calls = f.counter(
        "grpc_requests", "RocketMQ 5 gRPC calls answered, by RPC and status code.", ["rpc", "code"]
    )
    for (rpc, code), n in sorted(metrics.grpc_calls.items()):
        calls.add_metric(ident + [rpc, code], n)
    yield calls
    grpc = broker.grpc
    if grpc is None:
        return
    yield f.one("grpc_clients", "5.x clients known to the gRPC endpoint (heartbeats or a Telemetry stream).",
                len(grpc.clients.sessions))
    yield histogram_family(
        f"{PREFIX}_grpc_receive_duration_seconds",
        "ReceiveMessage calls that handed out messages, request to answer (long polling included).",
        f.base,
        [(ident, metrics.grpc_receive_latency)],
    )


def _queue_families(broker: BrokerView, store: MessageStore, f: _Families) -> Iterator[Metric]:
    """Queue offsets, consumer offsets and lag, retry/DLQ totals, delayed messages. A slave's copies
    of the group's queues and offsets are the master's: left to the master."""
    ident = f.ident
    copies = broker.settings.identity.role is BrokerRole.SLAVE
    queues = [] if copies else sorted(
        (cq.topic, cq.queue_id, cq.max_offset, cq.min_offset) for cq in store.consume_queues())
    maxes = {(t, q): mx for t, q, mx, _ in queues}
    g_max = f.gauge(
        "queue_max_offset", "Next offset of a consume queue (messages ever stored in it).", ["topic", "queue"]
    )
    g_min = f.gauge("queue_min_offset", "First offset still stored in a consume queue.", ["topic", "queue"])
    for topic, queue, mx, mn in queues:
        if topic in (SCHEDULE_TOPIC, TIMER_TOPIC):
            continue
        g_max.add_metric(ident + [topic, str(queue)], mx)
        g_min.add_metric(ident + [topic, str(queue)], mn)
    yield g_max
    yield g_min

    g_off = f.gauge("consumer_offset", "Committed offset of a group in a queue.", ["group", "topic", "queue"])
    g_lag = f.gauge("consumer_lag_messages",
                    "Messages of a queue a group has not consumed yet (max offset - committed offset).",
                    ["group", "topic", "queue"])
    offsets = {} if copies else broker.offsets.table
    for group, topic, queue, committed, lag in lag_rows(offsets, lambda t, q: maxes.get((t, q), 0)):
        g_off.add_metric(ident + [group, topic, str(queue)], committed)
        g_lag.add_metric(ident + [group, topic, str(queue)], lag)
    yield g_off
    yield g_lag

    groups = [] if copies else [g for g in broker.groups.table if g not in SYSTEM_GROUPS]
    triples = [(t, q, mx) for t, q, mx, _ in queues]
    for name, doc, prefix in (
        ("retry_messages", "Messages ever put in a group's retry topic (%RETRY%<group>).", RETRY_PREFIX),
        ("dlq_messages", "Messages ever put in a group's dead-letter topic (%DLQ%<group>).", DLQ_PREFIX),
    ):
        family = f.counter(name, doc, ["group"])
        for group, total in special_topic_totals(groups, triples, prefix).items():
            family.add_metric(ident + [group], total)
        yield family

    schedule = broker.schedule
    g = f.gauge(
        "scheduled_messages", "Delayed messages waiting for their delivery time, per delay level.", ["level"]
    )
    if schedule is not None and not copies:
        waiting = scheduled_waiting(len(schedule.levels_ms),
                                    lambda q: maxes.get((SCHEDULE_TOPIC, q), 0), dict(schedule.offsets))
        for level, n in waiting.items():
            g.add_metric(ident + [str(level)], n)
    yield g
    timer = broker.timer
    if timer is not None and not copies:
        yield f.one(
            "timer_messages",
            "Timer messages (any-millisecond delivery) waiting for their time.",
            timer.pending,
        )
        c = f.counter("timer_delivered", "Timer messages put back in their topic since the broker started.")
        c.add_metric(ident, timer.delivered_count)
        yield c


def _store_families(broker: BrokerView, store: MessageStore, f: _Families) -> Iterator[Metric]:
    """Commitlog size and position, disk use, replication lag."""
    yield f.one("commitlog_size_bytes", "Bytes of the commitlog still stored (max - min physical offset).",
                max(0, store.get_max_phy_offset() - store.get_min_phy_offset()))
    yield f.one("commitlog_max_offset_bytes", "Commitlog write position: bytes ever written to it.",
                store.get_max_phy_offset())
    yield f.one(
        "disk_usage_ratio",
        "Used fraction of the disk holding the commitlog (0..1).",
        store.disk_usage_ratio(),
    )
    g = f.gauge(
        "replication_lag_bytes",
        "Master: commitlog bytes the most advanced connected slave has not acknowledged.",
    )
    ha = broker.ha_server
    lag_bytes = ha.lag_bytes if ha is not None else None
    if lag_bytes is not None:
        g.add_metric(f.ident, lag_bytes)
    yield g
    replica = broker.replica
    if replica is not None:
        yield f.one(
            "master_epoch", "Controller mode: the master epoch this replica's log follows.", replica.epoch
        )
        isr = f.gauge(
            "sync_state_set_size", "Controller mode, master: replicas in its in-sync set, itself included."
        )
        if replica.master and replica.view:
            isr.add_metric(f.ident, len(replica.view.get("syncStateSet", ())))
        yield isr
