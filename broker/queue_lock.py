"""The orderly-consumption lock table: consumer group → message queue → (client id, last renewal).

State only, no I/O; the clock is injectable so tests need no sleeping. A lock lives
``max_live_ms`` (60 s, Java's ``rebalance.lockMaxLiveTime``) after its last renewal; an expired lock
is free for anyone. RocketMQ 4.9's rules (``RebalanceLockManager``):

- ``try_lock_batch(group, mqs, client)``: a queue free, expired or already held by ``client`` is
  (re)locked for it and renewed; a queue live-held by another client is not. Returns the queues
  ``client`` holds now — the ``lockOKMQSet`` of LOCK_BATCH_MQ.
- ``unlock_batch(group, mqs, client)``: releases the queues ``client`` holds; others' stay.

>>> t = [0]
>>> table = QueueLockTable(clock=lambda: t[0])
>>> mq = MessageQueue("T", "broker-a", 0)
>>> table.try_lock_batch("g", [mq], "c1"), table.try_lock_batch("g", [mq], "c2")
({MessageQueue(topic='T', broker_name='broker-a', queue_id=0)}, set())
>>> t[0] = 60_001; sorted(table.try_lock_batch("g", [mq], "c2")) == [mq]
True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pyrocketmq.remoting.body import MessageQueue

LOCK_MAX_LIVE_MS = 60_000


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(slots=True)
class LockEntry:
    client_id: str
    last_update_ms: int


class QueueLockTable:
    def __init__(self, max_live_ms: int = LOCK_MAX_LIVE_MS, clock: Callable[[], int] = _now_ms) -> None:
        self.max_live_ms = max_live_ms
        self.clock = clock
        self._groups: dict[str, dict[MessageQueue, LockEntry]] = {}

    def _expired(self, entry: LockEntry, now: int) -> bool:
        return now - entry.last_update_ms > self.max_live_ms

    def try_lock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> set[MessageQueue]:
        now = self.clock()
        table = self._groups.setdefault(group, {})
        locked: set[MessageQueue] = set()
        for mq in mqs:
            entry = table.get(mq)
            if entry is None or entry.client_id == client_id or self._expired(entry, now):
                table[mq] = LockEntry(client_id, now)
                locked.add(mq)
        return locked

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> set[MessageQueue]:
        """Release ``client_id``'s locks on ``mqs``; returns the queues released."""
        table = self._groups.get(group)
        if table is None:
            return set()
        released = set()
        for mq in mqs:
            entry = table.get(mq)
            if entry is not None and entry.client_id == client_id:
                del table[mq]
                released.add(mq)
        if not table:
            del self._groups[group]
        return released

    def is_locked(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        """Whether ``client_id`` holds a live lock on ``mq`` (no renewal)."""
        entry = self._groups.get(group, {}).get(mq)
        return entry is not None and entry.client_id == client_id and not self._expired(entry, self.clock())

    def holder(self, group: str, mq: MessageQueue) -> str | None:
        """The client holding a live lock on ``mq``, if any."""
        entry = self._groups.get(group, {}).get(mq)
        if entry is None or self._expired(entry, self.clock()):
            return None
        return entry.client_id
