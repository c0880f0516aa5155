"""Delivery of delayed messages: one loop per delay level over ``SCHEDULE_TOPIC_XXXX`` queue level-1.

Each level's loop reads its schedule queue from the level's offset: while the entry at that offset
is due (its ``tagsCode`` is the delivery time), it looks the record up, re-stores it in its
``REAL_TOPIC``/``REAL_QID`` without ``DELAY`` (:func:`~.delay.delivered_inner`) and moves on; when
the entry is not due it sleeps until it is; with nothing to read it checks again in 100 ms. A put
that fails is retried after a pause, never skipped. Entries of one level are due in store order
(same delay for all), so the head of the queue is always the next one due.

Offsets (the next schedule-queue entry of each level) go to ``config/delayOffset.json``
(``{"offsetTable":{"1":12,…}}``, RocketMQ's shape) every ``flushDelayOffsetInterval`` ms and at stop,
written atomically. After a crash the store replays at most what the file missed: delivery is
at least once, as in RocketMQ.

Everything runs on the broker's event loop (store calls are short and synchronous there); the loops
share one start/stop shape with the broker's other background loops.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator

from pyrocketmq.remoting.names import SCHEDULE_TOPIC
from pyrocketmq.server.config_file import load_json_file
from pyrocketmq.service import Service

from .checkpoint import CheckpointedService
from .delay import correct_deliver_timestamp, delivered_inner, level_to_queue_id
from .store.consume_queue import FILLER_SIZE
from .store.message_store import MessageStore
from .store.values import PutMessageStatus

log = logging.getLogger("pyrocketmq.broker")

IDLE_WAIT_S = 0.1
"""Check an empty (or caught-up) level again after this long (Java's DELAY_FOR_A_WHILE)."""
RETRY_WAIT_S = 1.0
"""Retry a delivery whose put failed after this long."""
BATCH = 256
"""Deliveries per turn of one level's loop before it yields to the event loop."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class ScheduleService(CheckpointedService):
    """See the module docstring. ``deliver_level(level)`` is one turn of a level's loop (tests call
    it directly); ``start()``/``stop()`` run the loops on the current event loop."""

    def __init__(
        self,
        store: MessageStore,
        path: str,
        levels_ms: list[int],
        *,
        flush_interval_ms: int = 10_000,
        on_delivered: Callable[[str, int], None] | None = None,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        super().__init__(path, flush_interval_ms)
        self.store = store
        self.levels_ms = list(levels_ms)
        self.on_delivered = on_delivered
        self.clock = clock
        self.offsets: dict[int, int] = {}

    # -- persistence ------------------------------------------------------------------------------
    def load(self) -> None:
        doc = load_json_file(self.path) or {}
        for level, offset in (doc.get("offsetTable") or {}).items():
            try:
                self.offsets[int(level)] = int(offset)
            except (TypeError, ValueError):
                log.warning("delayOffset.json: ignoring entry %r: %r", level, offset)

    def progress_json(self) -> dict[str, object]:
        return {"offsetTable": {str(k): v for k, v in sorted(self.offsets.items())}}

    # -- one turn ---------------------------------------------------------------------------------
    def deliver_level(self, level: int) -> float:
        """Deliver what is due in ``level``'s queue; seconds until this level should look again."""
        cq = self.store.find_consume_queue(SCHEDULE_TOPIC, level_to_queue_id(level))
        if cq is None:
            return IDLE_WAIT_S
        offset = self.offsets.get(level, 0)
        if offset < cq.min_offset:
            log.warning(
                "delay level %d: offset %d below the queue's min %d; skipping ahead",
                level,
                offset,
                cq.min_offset,
            )
            offset = cq.min_offset
            self._set(level, offset)
        elif offset > cq.max_offset:
            # The queue lost its tail (a torn commitlog after a crash): resume at its end.
            log.warning(
                "delay level %d: offset %d past the queue's max %d; moving back", level, offset, cq.max_offset
            )
            offset = cq.max_offset
            self._set(level, offset)
        level_ms = self.levels_ms[level - 1]
        delivered = 0
        while offset < cq.max_offset and delivered < BATCH:
            unit = cq.get(offset)
            if unit is None:
                return IDLE_WAIT_S
            phys, size, deliver_ms = unit
            if size == FILLER_SIZE:
                offset += 1
                self._set(level, offset)
                continue
            now = self.clock()
            due = correct_deliver_timestamp(now, deliver_ms, level_ms)
            if due > now:
                return min((due - now) / 1000, level_ms / 1000)
            if not self._deliver_one(level, offset, phys):
                return RETRY_WAIT_S
            offset += 1
            delivered += 1
            self._set(level, offset)
        return 0 if delivered >= BATCH else IDLE_WAIT_S

    def _set(self, level: int, offset: int) -> None:
        self.offsets[level] = offset
        self._dirty = True

    def _deliver_one(self, level: int, offset: int, phys: int) -> bool:
        msg = self.store.look_message(phys)
        if msg is None:
            log.error(
                "delay level %d: no message at commitlog offset %d (entry %d); skipped", level, phys, offset
            )
            return True
        inner = delivered_inner(msg)
        if inner is None:
            log.error("delay level %d: message at %d has no REAL_TOPIC/REAL_QID; skipped", level, phys)
            return True
        result = self.store.put_message(inner)
        if result.status != PutMessageStatus.PUT_OK:
            log.warning(
                "delay level %d: re-storing the message at %d failed (%s); will retry",
                level,
                phys,
                result.status.name,
            )
            return False
        if self.on_delivered is not None:
            self.on_delivered(inner.topic, inner.queue_id)
        return True

    # -- the loops --------------------------------------------------------------------------------
    def loops(self) -> Iterator[Service]:
        for level in range(1, len(self.levels_ms) + 1):
            yield Service(
                f"delay level {level}", functools.partial(self.deliver_level, level), RETRY_WAIT_S,
                first_wait=False, chooses_wait=True, logger=log,
            )
