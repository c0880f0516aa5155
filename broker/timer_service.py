"""Delivery of timer messages: RocketMQ 5's any-millisecond timer over ``rmq_sys_wheel_timer``.

The store puts a message that asks for a later time (:mod:`.store.timer`) in the timer topic's
queue 0; each consume-queue unit's tags code is its due time. This service reads that queue in
order and keeps the pending entries in a heap by due time; when the head is due it re-stores the
record in its ``REAL_TOPIC``/``REAL_QID`` (:func:`delivered`). A turn loads what arrived (every
``IDLE_WAIT_S`` at the latest) and sleeps until the next due time, so a timer fires within about
0.1 s of its time.

Progress, in ``config/timerCheckpoint.json``: ``low`` (every entry below it is done) and the done
entries above it. After a restart the queue is read again from ``low`` and what is not done goes
back in the heap, so pending timers survive restarts; a crash replays at most what the last write
missed (at least once, as the delay levels). An entry pending longer than ``roll_after_ms`` is
*rolled*: a fresh copy goes to the head of the timer queue and the old entry is done — so ``low``
keeps moving, the done set stays small and the commitlog's retention never takes a pending
message's only copy (RocketMQ 5 rolls long timers the same way).

Recalls (RocketMQ 5.3.2+): each turn first reads the recall markers (the timer topic's queue 1, see
:mod:`.timer_recall`) into a :class:`~.timer_recall.RecallBook`, all of them before anything is
delivered, and a due entry whose real topic and ``UNIQ_KEY`` the book names is done without being
delivered. A recall is accepted only for a message not yet due (the recall processor checks it on
this same event loop), so the marker is always read before its message falls due. The book is
saved in the checkpoint under ``recall``.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from pyrocketmq.remoting.message import MessageExt, Prop
from pyrocketmq.remoting.names import TIMER_TOPIC
from pyrocketmq.server.config_file import load_json_file
from pyrocketmq.service import Service

from .checkpoint import CheckpointedService
from .restore import restored, restored_in_real_topic
from .store.consume_queue import FILLER_SIZE
from .store.message_store import MessageStore
from .store.timer import REQUEST_KEYS
from .store.values import MessageInner, PutMessageStatus
from .timer_recall import RECALL_QUEUE, RecallBook, recall_key

log = logging.getLogger("pyrocketmq.broker")

IDLE_WAIT_S = 0.1
RETRY_WAIT_S = 1.0
BATCH = 512
"""Entries loaded, and deliveries made, per turn before yielding to the event loop."""
ROLL_AFTER_MS = 3_600_000
ROLL_CHECK_MS = 10_000


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class TimerProgress:
    """Which timer-queue entries are done: all below ``low``, and ``done`` above it."""

    low: int = 0
    done: set[int] = field(default_factory=set)

    def mark(self, offset: int) -> None:
        if offset < self.low:
            return
        self.done.add(offset)
        while self.low in self.done:
            self.done.discard(self.low)
            self.low += 1

    def is_done(self, offset: int) -> bool:
        return offset < self.low or offset in self.done

    def skip_to(self, offset: int) -> None:
        """Entries below ``offset`` are gone from the queue: done."""
        if offset > self.low:
            self.low = offset
            self.done = {o for o in self.done if o >= offset}
            self.mark(offset - 1)

    def as_json(self) -> dict[str, object]:
        ranges: list[list[int]] = []
        for o in sorted(self.done):
            if ranges and ranges[-1][1] == o:
                ranges[-1][1] = o + 1
            else:
                ranges.append([o, o + 1])
        return {"low": self.low, "done": ranges}

    @classmethod
    def from_json(cls, doc: dict[str, object]) -> TimerProgress:
        p = cls(int(doc.get("low") or 0))  # type: ignore[call-overload]  # JSON: an int or absent
        for pair in doc.get("done") or ():  # type: ignore[attr-defined]  # JSON: a list of [start, end)
            start, end = int(pair[0]), int(pair[1])
            p.done.update(range(max(start, p.low), end))
        return p


def delivered(msg: MessageExt, now_ms: int) -> MessageInner | None:
    """What a due timer-store record becomes: its real topic and queue, the timer requests taken
    out (``TIMER_OUT_MS`` stays: when it was due), ``TIMER_DEQUEUE_MS`` added. None when it names
    no topic."""
    drop = {*REQUEST_KEYS, Prop.REAL_TOPIC, Prop.REAL_QID, Prop.TIMER_ROLL_TIMES}
    props = {k: v for k, v in msg.properties.items() if k not in drop}
    props[Prop.TIMER_DEQUEUE_MS] = str(now_ms)
    return restored_in_real_topic(msg, props)


def rolled(msg: MessageExt) -> MessageInner:
    """A fresh copy of a timer-store record at the head of the store (the old one is then done):
    long timers move forward so that the commitlog's retention never takes a pending one."""
    props = dict(msg.properties)
    props[Prop.TIMER_ROLL_TIMES] = str(int(props.get(Prop.TIMER_ROLL_TIMES) or 0) + 1)
    return restored(msg, topic=TIMER_TOPIC, queue_id=0, properties=props)




class TimerService(CheckpointedService):
    """See the module docstring. ``turn()`` is one step of the loop (tests call it directly)."""

    def __init__(self, store: MessageStore, path: str, *, flush_interval_ms: int = 10_000,
                 roll_after_ms: int = ROLL_AFTER_MS, clock: Callable[[], int] = _now_ms) -> None:
        super().__init__(path, flush_interval_ms)
        self.store, self.clock, self.roll_after_ms = store, clock, roll_after_ms
        self.progress = TimerProgress()
        self.scan = 0
        """Next timer-queue offset to load into the heap."""
        self.heap: list[tuple[int, int, int, int]] = []
        """(due ms, queue offset, commitlog offset, loaded at ms)."""
        self.recalls = RecallBook()
        """The recalled messages not yet passed (read from the recall markers)."""
        self.delivered_count = 0
        self.rolled_count = 0
        self.recalled_count = 0
        """Due entries dropped because they were recalled."""
        self._last_roll_check = 0

    # -- persistence ------------------------------------------------------------------------------
    def load(self) -> None:
        doc = load_json_file(self.path) or {}
        try:
            self.progress = TimerProgress.from_json(doc)
        except (TypeError, ValueError, IndexError) as e:
            log.warning("%s: unreadable (%s); timer messages are read again from the start", self.path, e)
            self.progress = TimerProgress()
        try:
            self.recalls = RecallBook.from_json(doc.get("recall"))
        except (TypeError, ValueError) as e:
            log.warning(
                "%s: recalls unreadable (%s); recall markers are read again from the start", self.path, e
            )
            self.recalls = RecallBook()
        self.scan = self.progress.low
        self.heap = []

    def adopt(self, doc: dict[str, object]) -> None:
        """A slave takes its master's progress (so it delivers from there once it is master itself)."""
        progress, recalls = TimerProgress.from_json(doc), RecallBook.from_json(doc.get("recall"))
        if progress.as_json() == self.progress.as_json() and recalls == self.recalls:
            return
        self.progress, self.scan, self.heap, self.recalls = progress, progress.low, [], recalls
        self.persist(force=True)

    def progress_json(self) -> dict[str, object]:
        return {**self.progress.as_json(), "recall": self.recalls.as_json()}

    @property
    def pending(self) -> int:
        return len(self.heap)

    # -- one turn ---------------------------------------------------------------------------------
    def turn(self) -> float:
        """Load new entries, deliver the due ones, roll old ones; seconds until the next turn."""
        cq = self.store.find_consume_queue(TIMER_TOPIC, 0)
        if cq is None:
            return IDLE_WAIT_S
        if self.scan < cq.min_offset:
            log.warning(
                "timer queue: entries below %d are gone (retention); skipping from %d",
                cq.min_offset,
                self.scan,
            )
            self.scan = cq.min_offset
            self.progress.skip_to(cq.min_offset)
            self._dirty = True
        elif self.scan > cq.max_offset:  # the queue lost its tail (a torn commitlog after a crash)
            self.scan = cq.max_offset
        if not self._read_recalls():
            return 0  # markers still to read: nothing is delivered before they are all known
        now = self.clock()
        loaded = 0
        while self.scan < cq.max_offset and loaded < BATCH:
            unit = cq.get(self.scan)
            if unit is None:
                break
            phys, size, due = unit
            if size == FILLER_SIZE:
                self.progress.mark(self.scan)
                self._dirty = True
            elif not self.progress.is_done(self.scan):
                heapq.heappush(self.heap, (due, self.scan, phys, now))
            self.scan += 1
            loaded += 1
        fired = 0
        while self.heap and self.heap[0][0] <= now and fired < BATCH:
            _, offset, phys, _ = self.heap[0]
            if not self._deliver(offset, phys, now):
                return RETRY_WAIT_S
            heapq.heappop(self.heap)
            self._done(offset)
            fired += 1
        if self.recalls and self.scan >= cq.max_offset:  # every stored entry is loaded: prune
            self._dirty |= self.recalls.prune(self.heap[0][0] if self.heap else None) > 0
        if now - self._last_roll_check >= ROLL_CHECK_MS:
            self._last_roll_check = now
            self._roll(now)
        if loaded >= BATCH or fired >= BATCH:
            return 0
        if self.heap:
            return max(0.0, min(IDLE_WAIT_S, (self.heap[0][0] - now) / 1000))
        return IDLE_WAIT_S

    def _read_recalls(self) -> bool:
        """Read new recall markers into the book (at most BATCH); whether all are read."""
        cq = self.store.find_consume_queue(TIMER_TOPIC, RECALL_QUEUE)
        if cq is None:
            return True
        book = self.recalls
        book.scan = min(max(book.scan, cq.min_offset), cq.max_offset)  # retention; a torn tail
        end = min(cq.max_offset, book.scan + BATCH)
        while book.scan < end:
            unit = cq.get(book.scan)
            if unit is not None and unit[1] != FILLER_SIZE:
                marker = self.store.look_message(unit[0])
                key = None if marker is None else marker.properties.get(Prop.TIMER_DEL_UNIQKEY)
                if key:
                    book.add(key, unit[2])
                else:
                    log.warning("recall queue entry %d: no recall marker there; skipped", book.scan)
            book.scan += 1
            self._dirty = True
        return book.scan >= cq.max_offset

    def _done(self, offset: int) -> None:
        self.progress.mark(offset)
        self._dirty = True

    def _deliver(self, offset: int, phys: int, now: int) -> bool:
        msg = self.store.look_message(phys)
        if msg is not None and self.recalls and self._recalled(msg):
            return True
        inner = None if msg is None else delivered(msg, now)
        if inner is None:
            log.error(
                "timer queue entry %d (commitlog %d): no message naming its topic; skipped", offset, phys
            )
            return True
        result = self.store.put_message(inner)
        if result.status != PutMessageStatus.PUT_OK:
            log.warning(
                "timer entry %d: re-storing in %s failed (%s); will retry",
                offset,
                inner.topic,
                result.status.name,
            )
            return False
        self.delivered_count += 1
        return True

    def _recalled(self, msg: MessageExt) -> bool:
        props = msg.properties
        if recall_key(props.get(Prop.REAL_TOPIC, ""), props.get(Prop.UNIQ_KEY, "")) not in self.recalls:
            return False
        self.recalled_count += 1
        log.info(
            "timer: message %s of %s was recalled; not delivered",
            props.get(Prop.UNIQ_KEY),
            props.get(Prop.REAL_TOPIC),
        )
        return True

    def _roll(self, now: int) -> None:
        """Move entries pending longer than ``roll_after_ms`` (and not due soon) to the head."""
        old = [e for e in self.heap if now - e[3] >= self.roll_after_ms and e[0] > now + ROLL_CHECK_MS]
        if not old:
            return
        moved = set()
        for _, offset, phys, _ in old:
            msg = self.store.look_message(phys)
            if msg is None:
                continue
            if self.store.put_message(rolled(msg)).status != PutMessageStatus.PUT_OK:
                break
            moved.add(offset)
            self._done(offset)
            self.rolled_count += 1
        if moved:
            self.heap = [e for e in self.heap if e[1] not in moved]
            heapq.heapify(self.heap)
            log.info(
                "timer: %d long-pending timer message(s) rolled to the head of the timer queue", len(moved)
            )

    # -- the loop ---------------------------------------------------------------------------------
    def loops(self) -> Iterator[Service]:
        yield Service(
            "timer delivery", self.turn, RETRY_WAIT_S, first_wait=False, chooses_wait=True, logger=log
        )
