"""The transaction check service: asks producer groups about half messages left unresolved.

Every ``transactionCheckInterval`` ms one turn (:meth:`TransactionCheckService.check_once`) walks
``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 from the saved offset, knowing which half offsets are resolved
from the op records in ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` queue 0; each half message gets the verdict of
:func:`~.transaction.decide`. A CHECK re-stores the half message at the queue's end with
``TRANSACTION_CHECK_TIMES`` + 1 (so the saved offset can pass the old entry) and sends
CHECK_TRANSACTION_STATE (39, oneway) about the *new* entry to one connected producer of its group;
the producer answers with END_TRANSACTION. A DISCARD re-stores it in ``TRANS_CHECK_MAX_TIME_TOPIC``.
The walk stops at the first entry too young to check, or at one whose re-store failed.

Progress is the consume offsets of the half and op queues under ``CID_RMQ_SYS_TRANS`` in
``consumerOffset.json`` (the broker persists them with the other offsets): after a restart the
walk resumes there, over consume queues the store rebuilt from the commitlog.
Runs on the broker's event loop; store calls are short and synchronous.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyrocketmq.remoting.message import MessageExt
from pyrocketmq.service import Service

from .consumer_offset import ConsumerOffsetManager
from .store.consume_queue import FILLER_SIZE
from .store.message_store import MessageStore
from .store.values import PutMessageStatus
from .transaction import (
    CHECK_MAX_TOPIC,
    HALF_TOPIC,
    OP_TOPIC,
    SYS_GROUP,
    Verdict,
    advance_op_offset,
    check_times,
    decide,
    discarded_inner,
    immunity_of,
    parse_op_body,
    rechecked_inner,
)

log = logging.getLogger("pyrocketmq.broker")

MAX_SCAN = 10_000
"""Half messages looked at per turn at most (the rest wait for the next turn)."""
MAX_CHECKS_PER_GROUP = 500
"""Check-backs one producer group gets per turn at most: a store full of old half messages (after a
long outage, say) is asked about turn by turn, never in one storm; the walk resumes there."""

CheckSender = Callable[[str, MessageExt], bool]
"""``(producer group, re-stored half message)`` → whether a producer of the group was asked."""


@dataclass(frozen=True, slots=True)
class TransactionSettings:
    """The ``broker.conf`` keys of transactional messages (RocketMQ's names and defaults)."""

    check_interval_ms: int = 60_000
    """``transactionCheckInterval``: ms between two turns of the check service."""
    timeout_ms: int = 6_000
    """``transactionTimeOut``: a half message younger than this (from its born time) is not checked."""
    check_max: int = 15
    """``transactionCheckMax``: checks of one half message before it goes to TRANS_CHECK_MAX_TIME_TOPIC."""

    KEYS = ("transactionCheckInterval", "transactionTimeOut", "transactionCheckMax")

    @classmethod
    def from_conf(cls, conf: Mapping[str, str]) -> TransactionSettings:
        """>>> TransactionSettings.from_conf({"transactionCheckMax": "3"}).check_max
        3
        """
        values = []
        for key, default in zip(cls.KEYS, (60_000, 6_000, 15), strict=True):
            raw = conf.get(key, str(default)).strip()
            try:
                value = int(raw)
            except ValueError:
                raise ValueError(f"{key}={raw!r}: expected an integer") from None
            if value < (1 if key != "transactionCheckMax" else 0):
                raise ValueError(f"{key}={raw!r}: too small")
            values.append(value)
        return cls(*values)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class TransactionCheckService:
    def __init__(
        self,
        store: MessageStore,
        offsets: ConsumerOffsetManager,
        send_check: CheckSender,
        *,
        interval_ms: int = 60_000,
        timeout_ms: int = 6_000,
        check_max: int = 15,
        reserved_ms: int | None = None,
        clock: Callable[[], int] = _now_ms,
        ensure_topic: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.offsets = offsets
        self.send_check = send_check
        self.interval_ms = interval_ms
        self.timeout_ms = timeout_ms
        self.check_max = check_max
        self.max_checks_per_group = MAX_CHECKS_PER_GROUP
        self.reserved_ms = reserved_ms
        self.clock = clock
        self.ensure_topic = ensure_topic
        self._service = Service(
            "transaction check", self.check_once, lambda: self.interval_ms / 1000, logger=log
        )

    def _saved(self, topic: str) -> int:
        off = self.offsets.query(SYS_GROUP, topic, 0)
        return max(off, 0)

    def _resolved(self, op_from: int) -> tuple[set[int], list[tuple[int, int | None]]]:
        cq = self.store.find_consume_queue(OP_TOPIC, 0)
        done: set[int] = set()
        ops: list[tuple[int, int | None]] = []
        if cq is None:
            return done, ops
        for off in range(max(op_from, cq.min_offset), cq.max_offset):
            unit = cq.get(off)
            if unit is None:
                break
            phys, size, _tags = unit
            named = None
            if size != FILLER_SIZE:
                msg = self.store.look_message(phys)
                named = parse_op_body(msg.body) if msg is not None else None
            if named is not None:
                done.add(named)
            ops.append((off, named))
        return done, ops

    def check_once(self) -> int:
        """One turn (see the module docstring); returns how many checks were sent."""
        cq = self.store.find_consume_queue(HALF_TOPIC, 0)
        if cq is None:
            return 0
        half = max(self._saved(HALF_TOPIC), cq.min_offset)
        op_from = self._saved(OP_TOPIC)
        done, ops = self._resolved(op_from)
        end = cq.max_offset  # entries re-stored during this turn wait for the next one
        sent = 0
        per_group: dict[str, int] = {}
        now = self.clock()
        while half < end and half - self._saved(HALF_TOPIC) < MAX_SCAN:
            unit = cq.get(half)
            if unit is None:
                break
            phys, size, _tags = unit
            msg = None if size == FILLER_SIZE or half in done else self.store.look_message(phys)
            if msg is None:
                half += 1
                continue
            verdict = decide(
                resolved=False,
                times=check_times(msg),
                born_ms=msg.born_timestamp,
                now_ms=now,
                timeout_ms=self.timeout_ms,
                check_max=self.check_max,
                immunity_ms=immunity_of(msg),
                reserved_ms=self.reserved_ms,
            )
            if verdict is Verdict.WAIT:
                break
            if verdict is Verdict.DISCARD:
                if self.ensure_topic is not None:
                    self.ensure_topic(CHECK_MAX_TOPIC)
                result = self.store.put_message(discarded_inner(msg))
                if result.status != PutMessageStatus.PUT_OK:
                    log.warning(
                        "transaction check: moving half message %d aside failed (%s)",
                        half,
                        result.status.name,
                    )
                    break
                log.info(
                    "transaction check: half message %s checked %d times; "
                    "moved to TRANS_CHECK_MAX_TIME_TOPIC",
                    msg.msg_id,
                    check_times(msg),
                )
            else:
                group = msg.properties.get("PGROUP", "")
                if per_group.get(group, 0) >= self.max_checks_per_group:
                    break  # this group has had its share of this turn: the rest next turn
                per_group[group] = per_group.get(group, 0) + 1
                times = check_times(msg) + 1
                result = self.store.put_message(rechecked_inner(msg, times))
                if result.status != PutMessageStatus.PUT_OK:
                    log.warning(
                        "transaction check: re-storing half message %d failed (%s)", half, result.status.name
                    )
                    break
                again = self.store.look_message(result.wrote_offset)
                if again is not None and self.send_check(group, again):
                    sent += 1
            half += 1
        self.offsets.commit(SYS_GROUP, HALF_TOPIC, 0, half)
        self.offsets.commit(SYS_GROUP, OP_TOPIC, 0, advance_op_offset(op_from, ops, half))
        return sent

    # -- the loop ---------------------------------------------------------------------------------
    def start(self) -> None:
        self._service.start()

    async def stop(self) -> None:
        await self._service.stop()
