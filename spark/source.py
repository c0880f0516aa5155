"""The ``pyrocketmq`` PySpark data source: batch and streaming reads, batch and streaming writes.

The Spark-facing shell over the pure planning (:mod:`.offsets`, :mod:`.planning`, :mod:`.rows`)
and the client calls (:mod:`.broker_client`). Needs PySpark 4.2+ (admission control for Python
stream readers) — ``pip install 'pyrocketmq-k8s[spark]'``.

Where each piece runs:

- driver (Spark's Python planner / streaming-source worker): option parsing, the queue list,
  offsets (``initialOffset``, ``latestOffset(start, limit)``, ``partitions``), ``commit(end)``;
- executors: ``read(partition)`` pulls one queue range; ``write(rows)`` sends one partition.

Streaming guarantees: the offsets of every micro-batch are in Spark's checkpoint (offset JSON,
see :mod:`.offsets`), and a range re-read after a failure returns the same messages, so with an
idempotent sink (the file sink, Delta…) the output holds each message exactly once.
``commit(end)`` also stores ``end`` as the consumer group's offsets (UPDATE_CONSUMER_OFFSET) so
lag shows in ``pyrocketmq admin consumerProgress`` and Grafana. Spark calls ``commit`` only when
it plans the batch after, so ``latestOffset(start, …)`` — called once the previous batch is in the
commit log — stores ``start`` too, and the group is never a batch behind once a query is idle.
That commit is for monitoring (and ``startingOffsets=group`` of a new query): the checkpoint, not
the group, is where a restarted query resumes, and a failed commit only logs.

Writes are at-least-once by default (see :mod:`.rows` for the de-duplication key); streaming
writes with ``deliveryGuarantee=exactlyOnce`` go through RocketMQ transactions committed by the
driver's batch commit (:mod:`.transactional_sink`, :mod:`.exactly_once`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from pyrocketmq.client.errors import MQClientError, MQError
from pyrocketmq.client.message import Message
from pyrocketmq.remoting.body import MessageQueue

from .broker_client import QueueDirectory, read_range, send_messages
from .offsets import (
    OffsetJson,
    OffsetKind,
    Offsets,
    data_loss_error,
    decode_offsets,
    encode_offsets,
    find_losses,
    find_resets,
    forward,
    reset_error,
    resolve,
)
from .options import SinkOptions, SourceOptions, queue_times
from .planning import QueueRange, admit, backlog, plan_ranges, wait_for_more
from .rows import SCHEMA_DDL, check_writer_columns, dedup_key, message_to_row, row_to_message
from .transactional_sink import abort_batch, commit_batch, task_ids, write_halves

log = logging.getLogger("pyrocketmq.spark")

class RangePartition(InputPartition):
    """One Spark partition: one :class:`~.planning.QueueRange` (``value``)."""

    def __init__(self, value: QueueRange) -> None:
        super().__init__(value)


def _rows(opts: SourceOptions, partition: InputPartition | None) -> Iterator[tuple[Any, ...]]:
    # A batch read with no ranges still runs one task; PySpark hands it no partition.
    r: QueueRange | None = getattr(partition, "value", None)
    if r is None:
        return
    for msg in read_range(opts, r):
        yield message_to_row(msg, r.broker_name)


def starting_offsets(directory: QueueDirectory, queues: list[MessageQueue]) -> Offsets:
    """Where a new query (or a batch read) starts: ``startingTimestamp`` for every queue, else
    ``startingOffsetsByTimestamp`` for the queues it names and ``startingOffsets`` for the rest."""
    opts = directory.opts
    times = queue_times(queues, opts.starting_timestamp_ms, opts.starting_timestamps)
    if len(times) == len(queues):
        return directory.offsets_for_time(times)
    mins, maxs = directory.bounds(queues)
    committed = directory.committed(queues) if opts.starting.kind is OffsetKind.GROUP else None
    start = resolve(queues, opts.starting, min_offsets=mins, max_offsets=maxs, committed=committed)
    start.update(directory.offsets_for_time(times) if times else {})
    return _check_losses(opts, start, mins)


def ending_offsets(directory: QueueDirectory, queues: list[MessageQueue], start: Offsets) -> Offsets:
    """Where a batch read ends (exclusive): ``endingTimestamp`` for every queue, else
    ``endingOffsetsByTimestamp`` for the queues it names and ``endingOffsets`` for the rest; never
    before ``start``."""
    opts = directory.opts
    times = queue_times(queues, opts.ending_timestamp_ms, opts.ending_timestamps)
    if len(times) == len(queues):
        end = directory.offsets_for_time(times)
    else:
        maxs = directory.bounds(queues)[1]
        end = resolve(queues, opts.ending, min_offsets=start, max_offsets=maxs, fallback=OffsetKind.LATEST)
        end.update(directory.offsets_for_time(times) if times else {})
    return {mq: max(end[mq], start[mq]) for mq in queues}


def _check_losses(opts: SourceOptions, start: Offsets, mins: Offsets) -> Offsets:
    losses = find_losses(start, mins)
    if not losses:
        return start
    if opts.fail_on_data_loss:
        raise data_loss_error(losses)
    for loss in losses:
        log.warning("failOnDataLoss=false: skipping %d lost message(s) of %s (offsets %d..%d)",
                    loss.lost, loss.mq, loss.wanted, loss.available)
    return forward(start, mins)


class BatchReader(DataSourceReader):
    """``spark.read.format("pyrocketmq")``: the messages between the starting and ending offsets."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def partitions(self) -> list[InputPartition]:
        directory = QueueDirectory(self.opts)
        queues = directory.queues()
        start = starting_offsets(directory, queues)
        end = ending_offsets(directory, queues, start)
        return [RangePartition(r) for r in plan_ranges(start, end, self.opts.max_records_per_partition)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        return _rows(self.opts, partition)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("pyrocketmq")``: micro-batches of per-queue offset ranges, with
    admission control (``maxRecordsPerBatch``, ``minOffsetsPerTrigger`` / ``maxTriggerDelay``)
    and ``Trigger.AvailableNow``.

    Spark passes back the limit :meth:`getDefaultReadLimit` gave (one of PySpark's built-in
    limits: no composite of a minimum and a maximum, and no delay in ``ReadMinRows``), or
    ``ReadAllAvailable`` (``Trigger.Once``), so the reader applies its options itself unless
    told to read everything. The delay is timed from the last batch the reader admitted, or
    from its first ``latestOffset`` (the query's start).
    """

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._directory: QueueDirectory | None = None
        self._latest: Offsets | None = None
        self._target: Offsets | None = None
        self._committed: Offsets | None = None
        self._last_batch_at: float | None = None

    @property
    def directory(self) -> QueueDirectory:
        if self._directory is None:
            self._directory = QueueDirectory(self.opts)
        return self._directory

    def initialOffset(self) -> OffsetJson:
        d = self.directory
        return encode_offsets(starting_offsets(d, d.queues()))

    def getDefaultReadLimit(self) -> ReadLimit:
        most, least = self.opts.max_records_per_batch, self.opts.min_records_per_batch
        if most:
            return ReadMaxRows(most)
        return ReadMinRows(least) if least else ReadAllAvailable()

    def _limits(self, limit: ReadLimit) -> tuple[int | None, int | None]:
        """``(min, max)`` offsets of the next batch under ``limit`` (see the class docstring)."""
        if isinstance(limit, ReadAllAvailable):
            return None, None
        least = limit.min_rows if isinstance(limit, ReadMinRows) else self.opts.min_records_per_batch
        most = limit.max_rows if isinstance(limit, ReadMaxRows) else self.opts.max_records_per_batch
        if self._target is not None:  # Trigger.AvailableNow reads all it found, the tail included
            least = None
        return least, most

    def prepareForTriggerAvailableNow(self) -> None:
        d = self.directory
        self._target = d.bounds(d.queues())[1]

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> OffsetJson:
        d = self.directory
        begin = decode_offsets(start, "the checkpointed start offset")
        # Spark runs one micro-batch at a time and asks for the next end only once the previous
        # batch is in its commit log, so ``start`` is processed: store it for the group now
        # rather than at the next batch's construction (Spark's commit(end) lags one batch, and
        # never comes for the last batch of a Trigger.AvailableNow run).
        self._commit_group(begin)
        queues = d.queues()
        mins, maxs = d.bounds(queues)
        self._latest = maxs
        effective = _check_losses(self.opts, {mq: off for mq, off in begin.items()},
                                  {mq: v for mq, v in mins.items() if mq in begin})
        resets = find_resets(effective, maxs)
        if resets:
            if self.opts.fail_on_data_loss:
                raise reset_error(resets)
            for r in resets:
                log.warning("failOnDataLoss=false: %s went back from %d to %d; continuing from there",
                            r.mq, r.wanted, r.available)
                effective[r.mq] = r.available
        latest = dict(maxs)
        if self._target is not None:  # Trigger.AvailableNow: nothing beyond what existed at its start
            latest = {mq: min(v, self._target[mq]) for mq, v in latest.items() if mq in self._target}
        least, most = self._limits(limit)
        now = time.monotonic()
        if self._last_batch_at is None:
            self._last_batch_at = now
        new_queues = {mq: mins.get(mq, 0) for mq in latest if mq not in effective}
        available = backlog({**new_queues, **effective}, latest)
        waited_ms = (now - self._last_batch_at) * 1000
        if wait_for_more(available, least, waited_ms, self.opts.max_trigger_delay_ms):
            return encode_offsets(begin)
        if available:
            self._last_batch_at = now
        return encode_offsets(admit(effective, latest, most, new_queue_start=mins))

    def reportLatestOffset(self) -> OffsetJson | None:
        return encode_offsets(self._latest) if self._latest else None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        ranges = plan_ranges(decode_offsets(start), decode_offsets(end), self.opts.max_records_per_partition)
        return [RangePartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        return _rows(self.opts, partition)

    def commit(self, end: dict[str, Any]) -> None:
        self._commit_group(decode_offsets(end))

    def _commit_group(self, offsets: Offsets) -> None:
        if not self.opts.commit_group or offsets == self._committed:
            return
        try:
            self.directory.commit(offsets)
        except MQError as e:
            log.warning(
                "could not store the offsets of group %s on the brokers (the checkpoint has them): %s",
                self.opts.group,
                e,
            )
            return
        self._committed = dict(offsets)

    def stop(self) -> None:
        self._directory = None


@dataclass
class SentCount(WriterCommitMessage):
    """What one write task reports: how many messages it sent."""

    count: int


def _send_partition(opts: SinkOptions, rows: Iterator[Any], streaming: bool) -> SentCount:
    partition, batch_id, query_id = task_ids()
    if not streaming:
        batch_id, query_id = opts.batch_id, None

    def messages() -> Iterator[Message]:
        for i, row in enumerate(rows):
            key = (
                dedup_key(opts.dedup_key_prefix, query_id, batch_id or "0", partition, i)
                if opts.dedup_key
                else None
            )
            yield row_to_message(row.asDict(recursive=False), opts.topic, key)

    return SentCount(send_messages(opts, messages()))


class BatchWriter(DataSourceWriter):
    """``df.write.format("pyrocketmq")``: each task sends its rows; at-least-once."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _send_partition(self.opts, iterator, streaming=False)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("sent %d message(s)", sum(m.count for m in messages if isinstance(m, SentCount)))


class StreamWriter(DataSourceStreamWriter):
    """``df.writeStream.format("pyrocketmq")``: each micro-batch's tasks send their rows; a failed
    batch is run again (at-least-once; use ``dedupKey`` to let consumers drop repeats). With
    ``deliveryGuarantee=exactlyOnce`` the tasks send half messages that the batch's commit ends
    (:mod:`.transactional_sink`)."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        if self.opts.exactly_once:
            return write_halves(self.opts, iterator)
        return _send_partition(self.opts, iterator, streaming=True)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.opts.exactly_once:
            commit_batch(self.opts, messages, batchId)
            return
        log.info("batch %d: sent %d message(s)", batchId,
                 sum(m.count for m in messages if isinstance(m, SentCount)))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.opts.exactly_once:
            abort_batch(self.opts, messages, batchId)
            return
        log.warning("batch %d failed; the messages its finished tasks sent stay sent and are sent again "
                    "when the batch is retried", batchId)


class RocketMQDataSource(DataSource):
    """The ``pyrocketmq`` format. Register it once per session, then read and write.

    Example::

        from pyrocketmq.spark import register
        register(spark)
        df = (spark.readStream.format("pyrocketmq")
              .option("nameServer", "127.0.0.1:9876").option("topic", "Orders")
              .option("consumerGroup", "orders-etl").option("maxRecordsPerBatch", 10000)
              .load())
        (df.selectExpr("CAST(body AS STRING) AS body").writeStream.format("pyrocketmq")
           .option("nameServer", "127.0.0.1:9876").option("topic", "OrdersCopy")
           .option("checkpointLocation", "/tmp/ckpt").start())
    """

    @classmethod
    def name(cls) -> str:
        return "pyrocketmq"

    def schema(self) -> str:
        return SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(SourceOptions.from_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(SourceOptions.from_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        opts = SinkOptions.from_options(self.options)
        check_writer_columns(schema.fieldNames(), opts.topic)
        if opts.exactly_once:
            raise MQClientError("deliveryGuarantee=exactlyOnce is for streaming writes (writeStream); "
                                "a batch write is at-least-once: use dedupKey=true")
        return BatchWriter(opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        opts = SinkOptions.from_options(self.options)
        check_writer_columns(schema.fieldNames(), opts.topic)
        return StreamWriter(opts)
