"""Recalls of timer messages (Apache RocketMQ 5.3.2+): the marker a recall stores, and the book the
timer service keeps of the markers. Pure, no I/O, no clock.

A marker (:func:`recall_marker`) is a record of the timer topic's queue 1 (:data:`RECALL_QUEUE`; queue 0
holds the timer messages) with ``TIMER_DEL_UNIQKEY`` = ``<topic>+<message id>`` (:func:`recall_key`,
Apache's delete key), ``UNIQ_KEY`` = that message's id and ``TIMER_OUT_MS`` = its due time (the
unit's tags code). Apache writes its markers into the timer wheel itself, due with the message they
delete; a queue of their own lets the service read them without reading every timer message twice.

A marker names ``<topic>+<message id>`` and the due time of the message it recalls. The service reads
the markers (the timer topic's queue 1, from ``scan``) before it delivers anything, and drops a due
message whose key is here. A key stays until no timer message due at or before its time can still be
delivered (:meth:`RecallBook.prune`): so every copy of the message (a producer's retried send, a
long timer's rolled copy) is dropped, and the book only holds recalls still ahead.

Persisted with the timer's progress (``timerCheckpoint.json``, key ``recall``): ``{"scan": n,
"keys": {key: due}}``. After a restart the book is the one last written plus the markers from its
``scan`` on, read again (a marker read twice is one key), so a recall survives a crash even when
it came after the last write.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from pyrocketmq.remoting.message import Prop
from pyrocketmq.remoting.names import TIMER_TOPIC

from .store.values import MessageInner

RECALL_QUEUE = 1
"""The timer topic's queue of recall markers."""
RECALL_TAG = "_RECALL_TAG_"
"""A recall marker's tag (Apache's)."""


def recall_key(topic: str, message_id: str) -> str:
    """What a recall marker names: ``<topic>+<message id>`` (Apache ``buildDeleteKey``)."""
    return f"{topic}+{message_id}"


def recall_marker(
    topic: str, message_id: str, due_ms: int, *, producer_group: str | None, now_ms: int
) -> MessageInner:
    """The marker that recalls the timer message ``message_id`` of ``topic`` due at ``due_ms``: its
    ``UNIQ_KEY`` is that message's id (what a recall answers), as Apache's marker carries it."""
    props = {
        Prop.TAGS: RECALL_TAG,
        Prop.REAL_TOPIC: topic,
        Prop.REAL_QID: "0",
        Prop.UNIQ_KEY: message_id,
        Prop.TIMER_DEL_UNIQKEY: recall_key(topic, message_id),
        Prop.TIMER_DELIVER_MS: str(due_ms + 1),
        Prop.TIMER_OUT_MS: str(due_ms),
    }
    if producer_group:
        props[Prop.PGROUP] = producer_group
    return MessageInner.build(TIMER_TOPIC, b"0", props, queue_id=RECALL_QUEUE, born_timestamp=now_ms)


@dataclass(slots=True)
class RecallBook:
    """See the module docstring."""

    scan: int = 0
    """Next offset of the recall queue to read."""
    keys: dict[str, int] = field(default_factory=dict)
    """``<topic>+<message id>`` → the due time (epoch ms) of the message recalled."""
    _by_due: list[tuple[int, str]] = field(default_factory=list, compare=False, repr=False)
    """The keys in a heap by due time (an entry whose time is no longer its key's is stale)."""

    def __post_init__(self) -> None:
        self._by_due = [(due, key) for key, due in self.keys.items()]
        heapq.heapify(self._by_due)

    def add(self, key: str, due_ms: int) -> None:
        due = max(due_ms, self.keys.get(key, due_ms))
        if self.keys.get(key) != due:
            self.keys[key] = due
            heapq.heappush(self._by_due, (due, key))

    def __contains__(self, key: object) -> bool:
        return key in self.keys

    def __len__(self) -> int:
        return len(self.keys)

    def prune(self, pending_from_ms: int | None) -> int:
        """Forget the recalls of messages due before ``pending_from_ms``, the earliest due time of a
        timer message still to deliver (None: none is, all are forgotten); how many went. The caller
        asks only once every stored timer message is loaded, so none due earlier can come."""
        gone = 0
        while self._by_due and (pending_from_ms is None or self._by_due[0][0] < pending_from_ms):
            due, key = heapq.heappop(self._by_due)
            if self.keys.get(key) == due:
                del self.keys[key]
                gone += 1
        return gone

    def as_json(self) -> dict[str, object]:
        return {"scan": self.scan, "keys": dict(self.keys)}

    @classmethod
    def from_json(cls, doc: object) -> RecallBook:
        """The book a checkpoint holds (an absent or empty one: nothing recalled, read from 0);
        TypeError / ValueError for one that is not a book."""
        if not doc:
            return cls()
        if not isinstance(doc, dict):
            raise TypeError(f"a recall book is an object, not {type(doc).__name__}")
        keys = doc.get("keys") or {}
        if not isinstance(keys, dict):
            raise TypeError("the recall book's keys are an object")
        return cls(int(doc.get("scan") or 0), {str(k): int(v) for k, v in keys.items()})
