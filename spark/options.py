"""The options of the ``pyrocketmq`` Spark data source, parsed and checked once, on the driver.

Pure: no Spark, no sockets. Spark hands a data source its options as a case-insensitive string
map; :meth:`SourceOptions.from_options` and :meth:`SinkOptions.from_options` turn it into frozen,
picklable values (they travel to executors inside partitions and writers) or raise
:class:`~pyrocketmq.client.errors.MQClientError` naming the option and what it accepts.

Reading (``spark.read`` / ``spark.readStream``); the Kafka source's names mean what they mean there::

    nameServer          host:port[;host:port]        required (alias: namesrvAddr)
    topic               Orders  or  Orders,Payments  (alias: topics)  } exactly one of
    subscribePattern    regex over topic names: Orders-.*            } the two
                        (whole name, like Java's matches(); Python re syntax for the common
                        subset; system, retry, DLQ, broker- and cluster-name topics never match;
                        a streaming query picks up new matching topics at its next batches,
                        their queues from the earliest offset)
    consumerGroup       group whose offsets streaming commits track; pulls use it too
                        (default: no commits, pulls as PYROCKETMQ_SPARK_READER)
    subExpression       * | TagA || TagB            tag filter (alias: tags), default *
    startingOffsets     earliest | latest | group | JSON   (stream default latest, batch earliest)
    startingOffsetsByTimestamp  JSON like startingOffsets' with ms since the epoch for offsets:
                        those queues start at their first message stored at/after that time;
                        queues it leaves out follow startingOffsets
    startingTimestamp   ms since the epoch, for every queue (wins over the two above)
    endingOffsets       latest | JSON                batch only, default latest
    endingOffsetsByTimestamp  JSON of ms, batch only: read up to (not including) the first
                        message stored at/after that time; other queues follow endingOffsets
    endingTimestamp     ms since the epoch, for every queue (wins over the two above)
    maxRecordsPerBatch  offsets admitted per micro-batch, default unlimited
                        (alias: maxOffsetsPerTrigger)
    minOffsetsPerTrigger  no micro-batch until this many new offsets are there, unless
                        maxTriggerDelay passed since the last batch (or the query's start);
                        ignored by Trigger.AvailableNow, which reads everything
    maxTriggerDelay     duration: 100ms, 30s, 5m, 1h (a bare number is ms), default 15m
    maxRecordsPerPartition  cut longer queue ranges into several tasks, default unlimited
    failOnDataLoss      true | false                 default true
    pullBatchSize       messages per pull request, default 32
    pullTimeoutMs       ms to wait for one pull's answer, default 10000
    requestTimeoutMs    ms to wait for name server / offset requests, default 3000

A timestamp option finds, per queue, the first message stored at or after the time; where every
message is older the queue starts (or ends) at its latest offset — for a start that is what the
Kafka source does with ``startingOffsetsByTimestampStrategy=latest`` (its default fails instead).

Writing (``df.write`` / ``df.writeStream``): ``nameServer``, ``topic`` (default topic for rows
without a ``topic`` column), ``producerGroup``, ``sendTimeoutMs``, ``maxInFlight`` (concurrent
sends per task), ``dedupKey`` (add a deterministic key per row, see :mod:`.rows`),
``dedupKeyPrefix``, ``batchId`` (the batch id used in keys of a batch write), and::

    deliveryGuarantee   atLeastOnce | exactlyOnce    default atLeastOnce (streaming writes only)
                        atLeastOnce: tasks send plainly; a failed task or a batch re-run after a
                        restart sends again (dedupKey lets consumers drop repeats; fastest).
                        exactlyOnce: tasks send half messages, the driver's batch commit ends
                        them, a replayed batch's are rolled back, and the brokers' check-backs
                        are answered from the checkpoint (see :mod:`.exactly_once`). Needs
                        checkpointLocation given as a writeStream option, on a local or mounted
                        file system, and a producerGroup of its own per query (the default is
                        PYROCKETMQ_SPARK_WRITER_EOS_<hash of the checkpoint path>).
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyrocketmq.client.errors import MQClientError
from pyrocketmq.client.message import check_topic
from pyrocketmq.client.pulling import MessageSelector, parse_expression
from pyrocketmq.client.settings import split_namesrv_addr
from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, is_system_topic

from .exactly_once import local_checkpoint
from .offsets import OffsetKind, OffsetSpec, parse_offset_spec, parse_timestamps

DEFAULT_READER_GROUP = "PYROCKETMQ_SPARK_READER"
DEFAULT_PRODUCER_GROUP = "PYROCKETMQ_SPARK_WRITER"
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000
"""``maxTriggerDelay``'s default, 15 minutes (the Kafka source's)."""


def _named(opts: Mapping[str, str], *names: str) -> tuple[str, str] | None:
    """The first of ``names`` given a non-blank value, as ``(name, value)``."""
    low = {str(k).lower(): v for k, v in opts.items()}
    for n in names:
        v = low.get(n.lower())
        if v is not None and str(v).strip() != "":
            return n, str(v).strip()
    return None


def _get(opts: Mapping[str, str], *names: str) -> str | None:
    found = _named(opts, *names)
    return found[1] if found else None


def _int(opts: Mapping[str, str], name: str, default: int | None, *, minimum: int,
         aliases: tuple[str, ...] = ()) -> int | None:
    values = {n: v for n in (name, *aliases) if (v := _get(opts, n)) is not None}
    if not values:
        return default
    if len(set(values.values())) > 1:
        raise MQClientError(f"options {' and '.join(values)} name the same limit: give one of them")
    given, raw = next(iter(values.items()))
    try:
        value = int(raw)
    except ValueError:
        raise MQClientError(f"option {given}={raw!r} must be an integer") from None
    if value < minimum:
        raise MQClientError(f"option {given}={value} must be at least {minimum}")
    return value


_DURATION = re.compile(r"(\d+)\s*(ms|s|m|min|h|d)?", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str, what: str) -> int:
    """``100ms``, ``30s``, ``5m``/``5min``, ``1h``, ``1d``, or a bare number of ms → ms.

    >>> parse_duration_ms("30s", "maxTriggerDelay"), parse_duration_ms("250", "x")
    (30000, 250)
    """
    m = _DURATION.fullmatch(text.strip())
    if m is None:
        raise MQClientError(f"option {what}={text!r} must be a duration like 100ms, 30s, 5m or 1h "
                            "(a bare number is ms)")
    return int(m.group(1)) * _UNIT_MS[(m.group(2) or "ms").lower()]


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _get(opts, name)
    if raw is None:
        return default
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise MQClientError(f"option {name}={raw!r} must be true or false")


def _name_server(opts: Mapping[str, str]) -> str:
    ns = _get(opts, "nameServer", "namesrvAddr", "namesrv")
    if ns is None or not split_namesrv_addr(ns):
        raise MQClientError("option nameServer is required: .option('nameServer', 'host:9876')")
    return ns


def _topics(opts: Mapping[str, str], required: bool) -> tuple[str, ...]:
    raw = _get(opts, "topic", "topics")
    if raw is None:
        if required:
            raise MQClientError("option topic is required: .option('topic', 'Orders') (several: 'A,B')")
        return ()
    topics = tuple(dict.fromkeys(t.strip() for t in raw.split(",") if t.strip()))
    for t in topics:
        check_topic(t)
    return topics


def _subscription(opts: Mapping[str, str]) -> tuple[tuple[str, ...], str | None]:
    """``(topics, None)`` or ``((), pattern)``: exactly one of ``topic`` and ``subscribePattern``."""
    pattern = _get(opts, "subscribePattern")
    if pattern is None:
        if _get(opts, "topic", "topics") is None:
            raise MQClientError("option topic or subscribePattern is required: .option('topic', 'Orders') "
                                "(several: 'A,B') or .option('subscribePattern', 'Orders-.*')")
        return _topics(opts, required=True), None
    if _get(opts, "topic", "topics") is not None:
        raise MQClientError("give option topic or subscribePattern, not both")
    try:
        re.compile(pattern)
    except re.error as e:
        raise MQClientError(
            f"option subscribePattern={pattern!r} is not a valid regular expression ({e}); "
            "it is matched against whole topic names, e.g. 'Orders-.*'"
        ) from None
    return (), pattern


def is_reserved_topic(topic: str, broker_and_cluster_names: Iterable[str] = ()) -> bool:
    """A topic ``subscribePattern`` never matches: the brokers' own (``TBW102``, ``RMQ_SYS_*``,
    ``SCHEDULE_TOPIC_XXXX``…), a group's retry or DLQ topic, or a broker or cluster name (a broker
    serves a topic named after itself and its cluster).

    >>> is_reserved_topic("%RETRY%g"), is_reserved_topic("TBW102"), is_reserved_topic("Orders")
    (True, True, False)
    """
    return (is_system_topic(topic) or topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))
            or topic in set(broker_and_cluster_names))


def match_topics(pattern: str, topics: Iterable[str],
                 broker_and_cluster_names: Iterable[str] = ()) -> list[str]:
    """The topics whose whole name matches ``pattern``, reserved ones left out (sorted).

    >>> match_topics("Orders-.*", ["Orders-eu", "Orders", "xOrders-us", "RMQ_SYS_TRACE_TOPIC"])
    ['Orders-eu']
    """
    rx = re.compile(pattern)
    names = set(broker_and_cluster_names)
    return sorted(t for t in set(topics) if rx.fullmatch(t) and not is_reserved_topic(t, names))


Times = tuple[tuple[MessageQueue, int], ...]
"""Per-queue timestamps (ms) of a ``*OffsetsByTimestamp`` option, sorted by queue."""


def _timestamps(opts: Mapping[str, str], name: str) -> Times:
    raw = _get(opts, name)
    return () if raw is None else tuple(sorted(parse_timestamps(raw, name).items()))


def queue_times(queues: Iterable[MessageQueue], every: int | None, table: Times) -> dict[MessageQueue, int]:
    """The timestamp each of ``queues`` starts (or ends) at: ``every`` for all (``*Timestamp``), else
    the ``*OffsetsByTimestamp`` entry of the queues it names; queues without one are left out.

    >>> q = MessageQueue("T", "b", 0)
    >>> queue_times([q], 5, ())[q], queue_times([q], None, ((q, 7),))[q], queue_times([q], None, ())
    (5, 7, {})
    """
    if every is not None:
        return {mq: every for mq in queues}
    named = dict(table)
    return {mq: named[mq] for mq in queues if mq in named}


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """What a reader needs; see the module docstring for the option names.

    Example::

        opts = SourceOptions.from_options({"nameServer": "127.0.0.1:9876", "topic": "Orders"})
        opts.topics        # ('Orders',)
    """

    name_server: str
    topics: tuple[str, ...]
    """The ``topic`` option's topics; empty when ``topic_pattern`` chooses them."""
    topic_pattern: str | None
    """``subscribePattern``: the topics are those the name servers know whose name matches."""
    group: str
    commit_group: bool
    expression: str | MessageSelector
    """Tags (``subExpression``) or a SQL92 selector (``sqlSelector``; the brokers need
    enablePropertyFilter)."""
    starting: OffsetSpec
    starting_timestamp_ms: int | None
    starting_timestamps: Times
    ending: OffsetSpec
    ending_timestamp_ms: int | None
    ending_timestamps: Times
    max_records_per_batch: int | None
    min_records_per_batch: int | None
    """``minOffsetsPerTrigger``: a micro-batch waits for this many new offsets…"""
    max_trigger_delay_ms: int
    """…or until ``maxTriggerDelay`` passed since the last batch."""
    max_records_per_partition: int | None
    fail_on_data_loss: bool
    pull_batch_size: int
    pull_timeout_ms: int
    request_timeout_ms: int

    @classmethod
    def from_options(cls, opts: Mapping[str, str], *, streaming: bool = True) -> SourceOptions:
        group = _get(opts, "consumerGroup", "group")
        starting = parse_offset_spec(
            _get(opts, "startingOffsets"),
            default=OffsetKind.LATEST if streaming else OffsetKind.EARLIEST,
            what="startingOffsets",
        )
        if starting.kind is OffsetKind.GROUP and group is None:
            raise MQClientError("startingOffsets=group needs the option consumerGroup")
        ending = parse_offset_spec(_get(opts, "endingOffsets"), default=OffsetKind.LATEST,
                                   what="endingOffsets", allow_group=False)
        if ending.kind is OffsetKind.EARLIEST:
            raise MQClientError("endingOffsets=earliest would read nothing: use 'latest' or JSON offsets")
        expr = _get(opts, "subExpression", "tags") or "*"
        sql = _get(opts, "sqlSelector")
        if sql is not None and expr != "*":
            raise MQClientError("give subExpression (tags) or sqlSelector, not both")
        topics, pattern = _subscription(opts)
        delay = _get(opts, "maxTriggerDelay")
        return cls(
            name_server=_name_server(opts),
            topics=topics,
            topic_pattern=pattern,
            group=group or DEFAULT_READER_GROUP,
            commit_group=group is not None,
            expression=MessageSelector.by_sql(sql) if sql is not None else parse_expression(expr).expression,
            starting=starting,
            starting_timestamp_ms=_int(opts, "startingTimestamp", None, minimum=0),
            starting_timestamps=_timestamps(opts, "startingOffsetsByTimestamp"),
            ending=ending,
            ending_timestamp_ms=_int(opts, "endingTimestamp", None, minimum=0),
            ending_timestamps=_timestamps(opts, "endingOffsetsByTimestamp"),
            max_records_per_batch=_int(opts, "maxRecordsPerBatch", None, minimum=1,
                                       aliases=("maxOffsetsPerTrigger",)),
            min_records_per_batch=_int(opts, "minOffsetsPerTrigger", None, minimum=1),
            max_trigger_delay_ms=(DEFAULT_MAX_TRIGGER_DELAY_MS if delay is None
                                  else parse_duration_ms(delay, "maxTriggerDelay")),
            max_records_per_partition=_int(opts, "maxRecordsPerPartition", None, minimum=1),
            fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
            pull_batch_size=_int(opts, "pullBatchSize", 32, minimum=1) or 32,
            pull_timeout_ms=_int(opts, "pullTimeoutMs", 10_000, minimum=1) or 10_000,
            request_timeout_ms=_int(opts, "requestTimeoutMs", 3_000, minimum=1) or 3_000,
        )


class DeliveryGuarantee(enum.Enum):
    """The ``deliveryGuarantee`` option of writes."""

    AT_LEAST_ONCE = "atLeastOnce"
    EXACTLY_ONCE = "exactlyOnce"

    @classmethod
    def parse(cls, raw: str | None) -> DeliveryGuarantee:
        """>>> DeliveryGuarantee.parse("exactly_once"), DeliveryGuarantee.parse(None)
        (<DeliveryGuarantee.EXACTLY_ONCE: 'exactlyOnce'>, <DeliveryGuarantee.AT_LEAST_ONCE: 'atLeastOnce'>)
        """
        if raw is None:
            return cls.AT_LEAST_ONCE
        for g in cls:
            if raw.replace("_", "").replace("-", "").lower() == g.value.lower():
                return g
        raise MQClientError(f"option deliveryGuarantee={raw!r} must be atLeastOnce or exactlyOnce")


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """What a writer needs; see the module docstring for the option names.

    Example::

        opts = SinkOptions.from_options({"nameServer": "127.0.0.1:9876", "topic": "Totals",
                                         "dedupKey": "true"})
    """

    name_server: str
    topic: str | None
    producer_group: str
    send_timeout_ms: int
    max_in_flight: int
    dedup_key: bool
    dedup_key_prefix: str
    batch_id: str
    request_timeout_ms: int
    delivery: DeliveryGuarantee = DeliveryGuarantee.AT_LEAST_ONCE
    checkpoint_location: str | None = None
    """The writeStream's ``checkpointLocation`` (exactlyOnce reads and writes it)."""

    @property
    def exactly_once(self) -> bool:
        return self.delivery is DeliveryGuarantee.EXACTLY_ONCE

    @classmethod
    def from_options(cls, opts: Mapping[str, str]) -> SinkOptions:
        topics = _topics(opts, required=False)
        if len(topics) > 1:
            raise MQClientError(f"option topic names one default topic for writing, got {list(topics)}")
        prefix = _get(opts, "dedupKeyPrefix") or "spark"
        if " " in prefix:
            raise MQClientError(
                f"option dedupKeyPrefix={prefix!r} must not contain spaces (keys are space-separated)"
            )
        batch_id = _get(opts, "batchId") or "0"
        if " " in batch_id:
            raise MQClientError(f"option batchId={batch_id!r} must not contain spaces")
        delivery = DeliveryGuarantee.parse(_get(opts, "deliveryGuarantee"))
        checkpoint = _get(opts, "checkpointLocation")
        group = _get(opts, "producerGroup", "group")
        if delivery is DeliveryGuarantee.EXACTLY_ONCE:
            if checkpoint is None:
                raise MQClientError(
                    "deliveryGuarantee=exactlyOnce needs the query's checkpoint: give it as "
                    ".option('checkpointLocation', path) on the writeStream (the session-wide "
                    "spark.sql.streaming.checkpointLocation is not passed to data sources)"
                )
            checkpoint = local_checkpoint(checkpoint)
            if group is None:
                digest = hashlib.sha1(checkpoint.encode()).hexdigest()[:12]
                group = f"{DEFAULT_PRODUCER_GROUP}_EOS_{digest}"
        return cls(
            name_server=_name_server(opts),
            topic=topics[0] if topics else None,
            producer_group=group or DEFAULT_PRODUCER_GROUP,
            send_timeout_ms=_int(opts, "sendTimeoutMs", 3_000, minimum=1) or 3_000,
            max_in_flight=_int(opts, "maxInFlight", 64, minimum=1) or 64,
            dedup_key=_bool(opts, "dedupKey", False),
            dedup_key_prefix=prefix,
            batch_id=batch_id,
            request_timeout_ms=_int(opts, "requestTimeoutMs", 3_000, minimum=1) or 3_000,
            delivery=delivery,
            checkpoint_location=checkpoint,
        )
