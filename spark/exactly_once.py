"""The exactly-once streaming sink's bookkeeping: batch commit records in the query's checkpoint and
the answer to the broker's check-back. No Spark, no sockets: files and pure decisions.

How a micro-batch is written with ``deliveryGuarantee=exactlyOnce``:

1. each write task (executor) draws a fresh *attempt id* (a random UUID: one per task attempt, so
   a retried task, a speculative copy and a batch replayed by a restarted query all differ) and
   sends every row as a **half message** carrying ``sparkQueryId``, ``sparkBatchId`` and
   ``sparkAttempt`` (:data:`QUERY_PROP`…); it ends nothing, and reports the half messages
   (broker, commitlog offset, half queue offset, msgId) to the driver;
2. the driver's ``commit(messages, batchId)`` — with the reports of the tasks Spark kept, one per
   partition — first writes the batch's :class:`BatchCommit` record ``COMMITTING`` with those
   attempt ids to ``<checkpointLocation>/pyrocketmq-sink/<batchId>`` (temp file, fsync, rename),
   ends every half message COMMIT and waits for each broker answer, then rewrites the record
   ``COMMITTED``, listing as ``pending`` the half messages whose END got no SUCCESS;
3. Spark writes ``commits/<batchId>`` only after that ``commit`` returned. A query restarted before
   that re-runs the batch with new attempts; its ``commit`` finds the record of the earlier run and
   rolls back its own half messages instead (if the earlier run died while ``COMMITTING``, the
   record is settled ``COMMITTED`` with every half message of the committed attempts pending).
   ``abort`` rolls back the half messages it is given.

Half messages nobody ended (a killed task or driver, a superseded attempt, a lost END) are the
broker's to ask about: it sends CHECK_TRANSACTION_STATE to a connected producer of the sink's
producer group — every process of the query that writes or commits keeps one, answering with
:func:`decide_check` from the checkpoint (:meth:`SinkCheckpoint.answer`):

- a record for the batch, the message's attempt not in it → ROLLBACK (superseded or failed attempt);
- the attempt committed, record ``COMMITTING`` → UNKNOWN (the driver is ending them);
- the attempt committed, record ``COMMITTED`` → COMMIT if the message is pending (its END was not
  confirmed, or the committing run died), else ROLLBACK: the driver committed it itself, and the
  broker asks about a half message only after re-storing a copy of it, so the copy is dropped;
- no record: ROLLBACK if Spark's ``commits/`` holds the batch (it was committed without this
  message), else UNKNOWN — the batch may still commit (this run, or a replay that then supersedes it);
- not this checkpoint's query (``metadata``'s id differs) or no sink properties → UNKNOWN.

Without any process of the query connected, the broker keeps the half messages (consumers never
see them) and checks every ``transactionCheckInterval`` until ``transactionCheckMax`` checks
(RocketMQ's 60 s and 15 by default), then moves them to ``TRANS_CHECK_MAX_TIME_TOPIC``: dropped.
That is harmless for attempts that were never committed (a restarted query writes the batch again)
and a loss for *pending* ones, so restart a query that died while committing within
``transactionCheckInterval × transactionCheckMax``, or raise ``transactionCheckMax``.

Known limit: a half message is ended once by the driver and never again (brokers — Apache
RocketMQ's and ours — commit a half message as often as they are told to), so a duplicate is
possible only when an END the driver sent got no answer *and* landed *and* the broker had already
re-stored a copy of that half message for a check (the batch's commit came later than
``transactionTimeOut`` after the send); or when a run died mid-commit after such copies existed.
"""

from __future__ import annotations

import enum
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlparse

from pyrocketmq.client.errors import MQClientError
from pyrocketmq.client.transaction import TransactionState

QUERY_PROP = "sparkQueryId"
BATCH_PROP = "sparkBatchId"
ATTEMPT_PROP = "sparkAttempt"
SINK_DIR = "pyrocketmq-sink"
"""The folder of :class:`BatchCommit` records inside the query's checkpoint."""
RETAIN_BATCHES = 1000
"""Records of batches older than the newest minus this many are deleted."""


class Phase(enum.Enum):
    COMMITTING = "committing"
    """The driver chose the attempts and is ending their half messages."""
    COMMITTED = "committed"
    """The driver is done; ``pending`` half messages are left to the broker's check-back."""


@dataclass(frozen=True, slots=True)
class BatchCommit:
    """The durable record of which attempts a micro-batch committed.

    >>> r = BatchCommit(7, "q", frozenset({"a1"}), Phase.COMMITTING)
    >>> BatchCommit.from_json(r.to_json()) == r
    True
    """

    batch_id: int
    query_id: str
    attempts: frozenset[str]
    phase: Phase
    pending: frozenset[str] = field(default_factory=frozenset)
    """msgIds of committed half messages whose END was not confirmed."""
    pending_all: bool = False
    """Every half message of the committed attempts is pending (the committing run died)."""

    def to_json(self) -> str:
        return json.dumps({
            "version": 1, "batchId": self.batch_id, "queryId": self.query_id,
            "attempts": sorted(self.attempts), "phase": self.phase.value,
            "pending": sorted(self.pending), "pendingAll": self.pending_all,
        })

    @classmethod
    def from_json(cls, text: str) -> BatchCommit:
        d = json.loads(text)
        return cls(int(d["batchId"]), str(d["queryId"]), frozenset(d["attempts"]), Phase(d["phase"]),
                   frozenset(d.get("pending", ())), bool(d.get("pendingAll", False)))

    def committed(self, pending: Iterable[str] = ()) -> BatchCommit:
        return replace(self, phase=Phase.COMMITTED, pending=frozenset(pending))

    def settled(self) -> BatchCommit:
        """A ``COMMITTING`` record whose run died: the check-back commits what it asks about."""
        if self.phase is Phase.COMMITTED:
            return self
        return replace(self, phase=Phase.COMMITTED, pending_all=True)


def decide_check(
    props: Mapping[str, str],
    msg_id: str,
    *,
    checkpoint_query_id: str | None,
    record: BatchCommit | None,
    last_committed: int | None,
) -> TransactionState:
    """The check-back answer for a half message with properties ``props`` (module docstring).

    >>> p = {QUERY_PROP: "q", BATCH_PROP: "3", ATTEMPT_PROP: "a"}
    >>> decide_check(p, "m", checkpoint_query_id="q", record=None, last_committed=2).name
    'UNKNOWN'
    >>> decide_check(p, "m", checkpoint_query_id="q", record=None, last_committed=3).name
    'ROLLBACK'
    """
    query, batch, attempt = props.get(QUERY_PROP), props.get(BATCH_PROP), props.get(ATTEMPT_PROP)
    if not query or not attempt or batch is None or not batch.isdigit() or query != checkpoint_query_id:
        return TransactionState.UNKNOWN
    if record is None:
        committed = last_committed is not None and int(batch) <= last_committed
        return TransactionState.ROLLBACK if committed else TransactionState.UNKNOWN
    if attempt not in record.attempts:
        return TransactionState.ROLLBACK
    if record.phase is Phase.COMMITTING:
        return TransactionState.UNKNOWN
    if record.pending_all or msg_id in record.pending:
        return TransactionState.COMMIT
    return TransactionState.ROLLBACK


def local_checkpoint(location: str) -> str:
    """The local directory of a ``checkpointLocation`` (a path or a ``file:`` URI); other file
    systems are refused, as the sink reads and writes the checkpoint with plain file calls.

    >>> local_checkpoint("file:///tmp/ckpt"), local_checkpoint("/tmp/ckpt")
    ('/tmp/ckpt', '/tmp/ckpt')
    """
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        path = parsed.path if parsed.scheme == "file" else location
        return os.path.abspath(path)
    raise MQClientError(
        f"deliveryGuarantee=exactlyOnce reads the query's checkpoint as local files, but "
        f"checkpointLocation={location!r} is on {parsed.scheme}: use a local or mounted path"
    )


class SinkCheckpoint:
    """The query's checkpoint as the sink reads it (Spark's ``metadata`` and ``commits/``) and
    writes it (its own ``pyrocketmq-sink/`` records)."""

    def __init__(self, location: str) -> None:
        self.root = Path(local_checkpoint(location))
        self.records = self.root / SINK_DIR

    def query_id(self) -> str | None:
        """The query id Spark wrote in ``metadata`` (None before the query first started)."""
        try:
            return str(json.loads((self.root / "metadata").read_text().splitlines()[0])["id"])
        except (OSError, ValueError, KeyError, IndexError):
            return None

    def last_committed(self) -> int | None:
        """The newest batch id in Spark's ``commits/`` (None: none yet)."""
        try:
            ids = [int(p.name) for p in (self.root / "commits").iterdir() if p.name.isdigit()]
        except OSError:
            return None
        return max(ids, default=None)

    def record(self, batch_id: int) -> BatchCommit | None:
        try:
            return BatchCommit.from_json((self.records / str(batch_id)).read_text())
        except FileNotFoundError:
            return None

    def write(self, record: BatchCommit) -> None:
        """Store ``record`` atomically and durably (temp file, fsync, rename, fsync the folder)."""
        self.records.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{record.batch_id}.", dir=self.records)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(record.to_json())
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.records / str(record.batch_id))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        dir_fd = os.open(self.records, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def purge(self, newest: int, keep: int = RETAIN_BATCHES) -> None:
        """Delete the records of batches older than ``newest - keep``."""
        for p in self.records.iterdir():
            if p.name.isdigit() and int(p.name) < newest - keep:
                p.unlink(missing_ok=True)

    def answer(self, props: Mapping[str, str], msg_id: str) -> TransactionState:
        """:func:`decide_check` on the checkpoint as it is now."""
        batch = props.get(BATCH_PROP, "")
        return decide_check(
            props,
            msg_id,
            checkpoint_query_id=self.query_id(),
            record=self.record(int(batch)) if batch.isdigit() else None,
            last_committed=self.last_committed(),
        )
