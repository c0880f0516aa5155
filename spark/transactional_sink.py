"""The exactly-once streaming sink (``deliveryGuarantee=exactlyOnce``): the Spark-facing steps.

Executors (:func:`write_halves`) send a partition's rows as half messages of one fresh attempt and
report them in a :class:`HalfBatch`; the driver (:func:`commit_batch`, :func:`abort_batch`) records
the batch's attempts in the checkpoint and ends the half messages. The protocol, the check-back
rule and what happens without a driver are in :mod:`.exactly_once`.

Test hooks (environment variables read where the step runs; used by ``tests/spark``):

- ``PYROCKETMQ_SPARK_EOS_PAUSE=<stage>:<batch id>:<marker file>`` — at ``before-commit`` (the
  executors' half messages are sent, nothing recorded or ended) or ``after-commit`` (recorded and
  ended, Spark's ``commits/`` not yet written) of that batch, the driver writes the marker file and
  sleeps, for the test to kill it there;
- ``PYROCKETMQ_SPARK_EOS_CRASH_TASK=<batch id>:<n>:<marker file>`` — the first attempt of
  partition 0's write task of that batch writes the marker file and exits its Python worker after
  sending ``n`` half messages (a killed executor).
"""

from __future__ import annotations

import itertools
import logging
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import WriterCommitMessage

from pyrocketmq.client import HalfMessage, Message, TransactionState

from .broker_client import end_halves, send_halves, transaction_producer_for
from .exactly_once import ATTEMPT_PROP, BATCH_PROP, QUERY_PROP, BatchCommit, Phase, SinkCheckpoint
from .options import SinkOptions
from .rows import dedup_key, row_to_message

log = logging.getLogger("pyrocketmq.spark")

#: Local properties Spark's micro-batch engine sets on the tasks of a batch.
BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"
PAUSE_ENV = "PYROCKETMQ_SPARK_EOS_PAUSE"
CRASH_TASK_ENV = "PYROCKETMQ_SPARK_EOS_CRASH_TASK"


def task_ids() -> tuple[int, str | None, str | None]:
    """``(partition, batch id, query id)`` of the running task (``(0, None, None)`` outside one)."""
    ctx = TaskContext.get()
    if ctx is None:
        return 0, None, None
    return ctx.partitionId(), ctx.getLocalProperty(BATCH_ID_PROPERTY), ctx.getLocalProperty(QUERY_ID_PROPERTY)


@dataclass
class HalfBatch(WriterCommitMessage):
    """What one exactly-once write task reports: its attempt and the half messages it left open."""

    query_id: str
    batch_id: int
    partition: int
    attempt: str
    halves: list[HalfMessage] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.halves)


def write_halves(opts: SinkOptions, rows: Iterator[Any]) -> HalfBatch:
    """Send one partition's rows as half messages of a new attempt (on an executor)."""
    partition, batch, query_id = task_ids()
    if batch is None or query_id is None:
        raise RuntimeError("deliveryGuarantee=exactlyOnce runs in streaming write tasks only")
    attempt = uuid.uuid4().hex
    props = {QUERY_PROP: query_id, BATCH_PROP: batch, ATTEMPT_PROP: attempt}

    def messages() -> Iterator[Message]:
        for i, row in enumerate(rows):
            key = dedup_key(opts.dedup_key_prefix, query_id, batch, partition, i) if opts.dedup_key else None
            yield row_to_message(row.asDict(recursive=False), opts.topic, key, props)

    msgs = messages()
    crash = _crash_hook(partition, batch)
    if crash is not None:
        crash_after, marker = crash
        send_halves(opts, itertools.islice(msgs, crash_after))
        with open(marker, "w") as f:
            f.write(f"{batch} {crash_after}\n")
        log.warning("test hook %s: exiting the write task after %d half messages",
                    CRASH_TASK_ENV, crash_after)
        os._exit(3)
    return HalfBatch(query_id, int(batch), partition, attempt, send_halves(opts, msgs))


def commit_batch(opts: SinkOptions, messages: list[WriterCommitMessage | None], batch_id: int) -> None:
    """The driver's commit of micro-batch ``batch_id``: record its attempts, end their half messages
    COMMIT — or, when an earlier run of the query already committed this batch, roll them back."""
    reports = [m for m in messages if isinstance(m, HalfBatch)]
    halves = [h for r in reports for h in r.halves]
    transaction_producer_for(opts)  # this process answers check-backs from now on
    _pause_hook("before-commit", batch_id)
    if not halves:
        return
    assert opts.checkpoint_location is not None
    checkpoint = SinkCheckpoint(opts.checkpoint_location)
    attempts = frozenset(r.attempt for r in reports)
    record = checkpoint.record(batch_id)
    if record is not None:
        if record.phase is Phase.COMMITTING:  # the run that chose it died while ending them
            checkpoint.write(record.settled())
        mine = [h for r in reports if r.attempt not in record.attempts for h in r.halves]
        end_halves(opts, mine, TransactionState.ROLLBACK)
        log.warning("batch %d was committed by an earlier run of the query: rolled back the %d "
                    "message(s) of this replay", batch_id, len(mine))
        return
    record = BatchCommit(batch_id, reports[0].query_id, attempts, Phase.COMMITTING)
    checkpoint.write(record)
    failed = end_halves(opts, halves, TransactionState.COMMIT)
    checkpoint.write(record.committed(h.msg_id for h in failed))
    checkpoint.purge(batch_id)
    log.info("batch %d: committed %d message(s)%s", batch_id, len(halves) - len(failed),
             f"; {len(failed)} left to the brokers' check-back" if failed else "")
    _pause_hook("after-commit", batch_id)


def abort_batch(opts: SinkOptions, messages: list[WriterCommitMessage | None], batch_id: int) -> None:
    """The driver's abort of ``batch_id``: roll back the half messages of the tasks that finished
    (those of failed tasks are rolled back by the check-back: their attempts are never committed)."""
    halves = [h for m in messages if isinstance(m, HalfBatch) for h in m.halves]
    failed = end_halves(opts, halves, TransactionState.ROLLBACK)
    log.warning("batch %d failed: rolled back %d message(s)", batch_id, len(halves) - len(failed))


def _pause_hook(stage: str, batch_id: int) -> None:
    raw = os.environ.get(PAUSE_ENV)
    if not raw:
        return
    want_stage, want_batch, marker = raw.split(":", 2)
    if want_stage == stage and int(want_batch) == batch_id:
        with open(marker, "w") as f:
            f.write(f"{stage} {batch_id} {os.getpid()}\n")
        log.warning("test hook %s: pausing at %s of batch %d", PAUSE_ENV, stage, batch_id)
        time.sleep(3600)


def _crash_hook(partition: int, batch: str) -> tuple[int, str] | None:
    raw = os.environ.get(CRASH_TASK_ENV)
    ctx = TaskContext.get()
    if not raw or ctx is None or partition != 0 or ctx.attemptNumber() != 0:
        return None
    want_batch, count, marker = raw.split(":", 2)
    return (int(count), marker) if want_batch == batch else None
