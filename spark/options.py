"""The options of the ``pyrocketmq`` Spark data source, parsed and checked once, on the driver.

Pure: no Spark, no sockets. Spark hands a data source its options as a case-insensitive string
map; :meth:`SourceOptions.from_options` and :meth:`SinkOptions.from_options` turn it into frozen,
picklable values (they travel to executors inside partitions and writers) or raise
:class:`~pyrocketmq.client.errors.MQClientError` naming the option and what it accepts.

Reading (``spark.read`` / ``spark.readStream``)::

    nameServer          host:port[;host:port]        required (alias: namesrvAddr)
    topic               Orders  or  Orders,Payments  required (alias: topics)
    consumerGroup       group whose offsets streaming commits track; pulls use it too
                        (default: no commits, pulls as PYROCKETMQ_SPARK_READER)
    subExpression       * | TagA || TagB            tag filter (alias: tags), default *
    startingOffsets     earliest | latest | group | JSON   (stream default latest, batch earliest)
    startingTimestamp   ms since the epoch: start at the first message stored at/after it
    endingOffsets       latest | JSON                batch only, default latest
    maxRecordsPerBatch  offsets admitted per micro-batch (admission control), default unlimited
    maxRecordsPerPartition  cut longer queue ranges into several tasks, default unlimited
    failOnDataLoss      true | false                 default true
    pullBatchSize       messages per pull request, default 32
    pullTimeoutMs       ms to wait for one pull's answer, default 10000
    requestTimeoutMs    ms to wait for name server / offset requests, default 3000

Writing (``df.write`` / ``df.writeStream``): ``nameServer``, ``topic`` (default topic for rows
without a ``topic`` column), ``producerGroup``, ``sendTimeoutMs``, ``maxInFlight`` (concurrent
sends per task), ``dedupKey`` (add a deterministic key per row, see :mod:`.rows`),
``dedupKeyPrefix``, ``batchId`` (the batch id used in keys of a batch write).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyrocketmq.client.errors import MQClientError
from pyrocketmq.client.message import check_topic
from pyrocketmq.client.pulling import MessageSelector, parse_expression
from pyrocketmq.client.settings import split_namesrv_addr

from .offsets import OffsetKind, OffsetSpec, parse_offset_spec

DEFAULT_READER_GROUP = "PYROCKETMQ_SPARK_READER"
DEFAULT_PRODUCER_GROUP = "PYROCKETMQ_SPARK_WRITER"


def _get(opts: Mapping[str, str], *names: str) -> str | None:
    low = {str(k).lower(): v for k, v in opts.items()}
    for n in names:
        v = low.get(n.lower())
        if v is not None and str(v).strip() != "":
            return str(v).strip()
    return None


def _int(opts: Mapping[str, str], name: str, default: int | None, *, minimum: int) -> int | None:
    raw = _get(opts, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise MQClientError(f"option {name}={raw!r} must be an integer") from None
    if value < minimum:
        raise MQClientError(f"option {name}={value} must be at least {minimum}")
    return value


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


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """What a reader needs; see the module docstring for the option names.

    Example::

        opts = SourceOptions.from_options({"nameServer": "127.0.0.1:9876", "topic": "Orders"})
        opts.topics        # ('Orders',)
    """

    name_server: str
    topics: tuple[str, ...]
    group: str
    commit_group: bool
    expression: str | MessageSelector
    """Tags (``subExpression``) or a SQL92 selector (``sqlSelector``; the brokers need
    enablePropertyFilter)."""
    starting: OffsetSpec
    starting_timestamp_ms: int | None
    ending: OffsetSpec
    max_records_per_batch: int | None
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
        return cls(
            name_server=_name_server(opts),
            topics=_topics(opts, required=True),
            group=group or DEFAULT_READER_GROUP,
            commit_group=group is not None,
            expression=MessageSelector.by_sql(sql) if sql is not None else parse_expression(expr).expression,
            starting=starting,
            starting_timestamp_ms=_int(opts, "startingTimestamp", None, minimum=0),
            ending=ending,
            max_records_per_batch=_int(opts, "maxRecordsPerBatch", None, minimum=1),
            max_records_per_partition=_int(opts, "maxRecordsPerPartition", None, minimum=1),
            fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
            pull_batch_size=_int(opts, "pullBatchSize", 32, minimum=1) or 32,
            pull_timeout_ms=_int(opts, "pullTimeoutMs", 10_000, minimum=1) or 10_000,
            request_timeout_ms=_int(opts, "requestTimeoutMs", 3_000, minimum=1) or 3_000,
        )


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
        return cls(
            name_server=_name_server(opts),
            topic=topics[0] if topics else None,
            producer_group=_get(opts, "producerGroup", "group") or DEFAULT_PRODUCER_GROUP,
            send_timeout_ms=_int(opts, "sendTimeoutMs", 3_000, minimum=1) or 3_000,
            max_in_flight=_int(opts, "maxInFlight", 64, minimum=1) or 64,
            dedup_key=_bool(opts, "dedupKey", False),
            dedup_key_prefix=prefix,
            batch_id=batch_id,
            request_timeout_ms=_int(opts, "requestTimeoutMs", 3_000, minimum=1) or 3_000,
        )
