"""Client settings: small groups, one docstring per field, defaults of the Apache RocketMQ 4.9 client.

- :class:`ClientSettings` — shared by everything that runs on one :class:`~.instance.ClientInstance`
  (name servers, identity, background intervals).
- :class:`ProducerSettings` — sends: timeout, retries, compression, fault avoidance.
- :class:`PullConsumerSettings` — pulls: batch size, long polling, buffering, offset commits.

All durations are in seconds (floats) unless the name ends in ``_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyrocketmq.remoting.names import AUTO_CREATE_TOPIC, DEFAULT_NAMESRV_PORT
from pyrocketmq.remoting.tls import ClientTls

if TYPE_CHECKING:
    from .metrics import ClientMetrics
    from .pulling import Selector


def split_namesrv_addr(addr: str) -> list[str]:
    """``"a:9876;b:9876"`` (``,`` also accepted) → ``["a:9876", "b:9876"]``.

    >>> split_namesrv_addr("127.0.0.1:9876; 10.0.0.2:9876")
    ['127.0.0.1:9876', '10.0.0.2:9876']
    """
    parts = [p.strip() for p in addr.replace(",", ";").split(";")]
    return [p for p in parts if p]


DEFAULT_NAMESRV = f"127.0.0.1:{DEFAULT_NAMESRV_PORT}"
"""The name server a client asks when given none: this host's, on the default port."""


@dataclass(slots=True)
class ClientSettings:
    """What one client runtime (name servers, identity, timers) needs."""

    namesrv_addr: str = DEFAULT_NAMESRV
    """Name servers, ``host:port`` separated by ``;``; requests fail over from one to the next."""
    instance_name: str = ""
    """Second half of the client id (``ip@instance``); empty means ``pid#nanotime`` (Java's default)."""
    client_ip: str = ""
    """The address put in the client id and unique message ids; empty means detect it."""
    request_timeout: float = 3.0
    """Seconds to wait for a name server or an admin/offset request to answer."""
    poll_namesrv_interval: float = 30.0
    """Seconds between refreshes of the routes of the topics in use."""
    heartbeat_interval: float = 30.0
    """Seconds between heartbeats to every broker (brokers drop clients silent for 120 s)."""
    connect_timeout: float = 3.0
    """Seconds to wait for a TCP connection to open."""
    access_key: str = ""
    """ACL: the account's access key; with ``secret_key``, every request is signed (Apache's
    ``AclClientRPCHook``). Empty: requests go unsigned."""
    secret_key: str = field(default="", repr=False)
    security_token: str = field(default="", repr=False)
    tls: ClientTls = field(default_factory=ClientTls)
    """TLS to name servers and brokers, e.g. ``ClientTls(enabled=True, trust_cert_path="ca.pem")``
    (``verify=False`` trusts any server, as Apache's clients do in their default test mode)."""


@dataclass(slots=True)
class ProducerSettings:
    """How a :class:`~.producer.Producer` sends."""

    send_timeout: float = 3.0
    """Seconds a send may take in total, retries included."""
    retries: int = 2
    """Extra attempts of a sync or async send on another broker after a retriable failure."""
    retry_another_broker_when_not_store_ok: bool = False
    """Also retry when the broker stored the message less durably than asked (FLUSH_*_TIMEOUT …)."""
    compress_over: int = 4096
    """Bodies of at least this many bytes are zlib-compressed (never batches)."""
    compress_level: int = 5
    """zlib level used for compression (Java's default)."""
    max_message_size: int = 4 * 1024 * 1024
    """Largest body (or batch body) accepted, in bytes (the broker's default ``maxMessageSize``)."""
    default_topic: str = AUTO_CREATE_TOPIC
    """Topic whose route is used, and named in the send header, when the topic does not exist yet."""
    default_topic_queue_nums: int = 4
    """Queues a broker creates for an auto-created topic."""
    latency_fault_enabled: bool = True
    """Avoid brokers that recently failed or answered slowly (see :mod:`.fault`)."""
    metrics: ClientMetrics | None = None
    """Told about every send (see :mod:`.metrics`; e.g. ``PrometheusClientMetrics()``); None: no metrics."""
    trace: bool = False
    """Write a trace record (Apache's ``Pub``) for every acknowledged send to ``trace_topic``, as the
    Java client's ``enableMsgTrace``; ``pyrocketmq admin queryMsgTraceById`` reads them back."""
    trace_topic: str = "RMQ_SYS_TRACE_TOPIC"


@dataclass(slots=True)
class PullConsumerSettings:
    """How a :class:`~.pull_consumer.PullConsumer` pulls and commits."""

    pull_batch_size: int = 32
    """Messages asked for per pull request (``maxMsgNums``)."""
    long_poll_ms: int = 20000
    """How long a broker may hold a pull that finds nothing (0 = answer at once)."""
    pull_timeout: float = 10.0
    """Seconds to wait for a pull's answer on top of ``long_poll_ms``."""
    max_buffered_per_queue: int = 1024
    """Pulled-but-not-polled messages per queue above which pulling that queue pauses."""
    pull_delay_on_error: float = 1.0
    """Seconds before a queue is pulled again after a failed pull."""
    auto_commit: bool = True
    """Commit the offsets of polled messages every ``auto_commit_interval`` and on shutdown."""
    auto_commit_interval: float = 5.0
    """Seconds between automatic commits."""
    consume_from: str = "last"
    """Where a queue without a committed offset starts: ``last`` (new messages only), ``first`` or
    ``timestamp``."""
    consume_timestamp_ms: int = 0
    """Start time for ``consume_from="timestamp"`` (ms since the epoch)."""
    expression: Selector = "*"
    """Tag expression of assigned topics: ``*`` or ``TagA || TagB``, or ``MessageSelector.by_sql(...)``."""
    topic_expressions: dict[str, Selector] = field(default_factory=dict)
    """Per-topic expressions overriding ``expression`` (``{"TopicA": "TagA"}``)."""


# -- push consumer ----------------------------------------------------------------------------------


@dataclass(slots=True)
class ConsumeSettings:
    """How a :class:`~.push_consumer.PushConsumer` hands messages to its listener."""

    batch_size: int = 1
    """Messages given to one listener call (``consumeMessageBatchMaxSize``)."""
    workers: int = 20
    """Worker threads running a plain-function listener (``consumeThreadMax``); also the number of
    coroutine listener calls running at once."""
    timeout_minutes: float = 15.0
    """A message whose listener call has run longer than this is sent back and dropped from its
    queue (``consumeTimeout``; concurrent mode)."""
    max_reconsume_times: int = -1
    """Attempts before a message goes to ``%DLQ%<group>``; -1 means the default: 16 for concurrent
    listeners, unlimited for orderly ones (``maxReconsumeTimes``)."""
    suspend_ms: int = 1000
    """Orderly mode: pause before a queue whose listener answered SUSPEND is consumed again."""
    resubmit_delay: float = 5.0
    """Seconds before a batch that could not be sent back is consumed again locally."""


@dataclass(slots=True)
class PullSettings:
    """How a push consumer pulls."""

    batch_size: int = 32
    """Messages asked for per pull (``pullBatchSize``)."""
    suspend_ms: int = 15000
    """How long a broker may hold a pull that finds nothing (``brokerSuspendMaxTimeMillis``)."""
    timeout: float = 30.0
    """Seconds to wait for a long-polling pull's answer (``consumerTimeoutMillisWhenSuspend``)."""
    delay_on_error: float = 3.0
    """Seconds before a queue is pulled again after a failed pull (``pullTimeDelayMillsWhenException``)."""
    interval: float = 0.0
    """Seconds between two pulls of one queue (``pullInterval``; 0 = pull again at once)."""


@dataclass(slots=True)
class FlowControlSettings:
    """When a queue stops being pulled until its listener catches up."""

    max_cached_messages: int = 1000
    """Messages cached per queue above which pulling it pauses (``pullThresholdForQueue``)."""
    max_cached_mib: int = 100
    """MiB of bodies cached per queue above which pulling it pauses (``pullThresholdSizeForQueue``)."""
    max_offset_span: int = 2000
    """Concurrent mode: the first and last cached offsets of a queue may be at most this far apart
    (``consumeConcurrentlyMaxSpan``); a stuck message therefore stops the queue eventually."""
    delay: float = 0.05
    """Seconds before a flow-controlled queue is looked at again."""


@dataclass(slots=True)
class RebalanceSettings:
    """Who consumes which queue, and how often that is decided again."""

    strategy: str = "averagely"
    """Allocation strategy: ``averagely``, ``averagely_by_circle``, ``consistent_hash`` or ``config``
    (see :mod:`.allocate`)."""
    interval: float = 20.0
    """Seconds between rebalances (besides the one at start and on a broker's notice)."""
    config_queues: list[Any] = field(default_factory=list)
    """The queues a ``config`` strategy consumer takes (``MessageQueue`` values)."""
    virtual_nodes: int = 10
    """Virtual nodes per consumer on the ``consistent_hash`` ring."""
    lock_interval: float = 20.0
    """Orderly mode: seconds between renewals of every broker queue lock."""
    lock_expiry: float = 30.0
    """Orderly mode: a queue lock not renewed for this long is treated as lost by the client."""


@dataclass(slots=True)
class PushConsumerSettings:
    """What a :class:`~.push_consumer.PushConsumer` does, grouped; every group has defaults.

    Example::

        PushConsumerSettings(message_model="BROADCASTING", consume=ConsumeSettings(workers=4))
    """

    message_model: str = "CLUSTERING"
    """``CLUSTERING`` (each message to one member of the group) or ``BROADCASTING`` (to every member)."""
    consume_from: str = "last"
    """Where a queue without a stored offset starts: ``last``, ``first`` or ``timestamp``."""
    consume_timestamp_ms: int = 0
    """Start time for ``consume_from="timestamp"`` (ms since the epoch; 0 = half an hour ago, as Java)."""
    offset_store_dir: str = ""
    """Broadcasting: folder of ``<group>/offsets.json``; empty means ``~/.rocketmq_offsets/<clientId>``."""
    persist_interval: float = 5.0
    """Seconds between offset persists (``persistConsumerOffsetInterval``)."""
    consume: ConsumeSettings = field(default_factory=ConsumeSettings)
    """Listener calls: batch size, workers, timeout, retries."""
    pull: PullSettings = field(default_factory=PullSettings)
    """Pull requests: batch size, long polling."""
    flow: FlowControlSettings = field(default_factory=FlowControlSettings)
    """Per-queue cache thresholds."""
    rebalance: RebalanceSettings = field(default_factory=RebalanceSettings)
    """Queue allocation and orderly locks."""
    metrics: ClientMetrics | None = None
    """Told about every listener call and pull (see :mod:`.metrics`); None: no metrics."""
    trace: bool = False
    """Write Apache's ``SubBefore``/``SubAfter`` trace records for every listener call to ``trace_topic``."""
    trace_topic: str = "RMQ_SYS_TRACE_TOPIC"
