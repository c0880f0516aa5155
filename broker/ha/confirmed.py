"""Controller mode: consumers read only what every in-sync replica holds.

A message a master wrote but no slave received yet is lost when that master dies: the elected
slave writes other messages at the same queue offsets. A consumer that had read it would go on
from past it and skip the new ones, though their producers were told SEND_OK. So a master in
controller mode serves reads up to its *confirm offset* only (RocketMQ 5's ``confirmOffset``): the
commitlog offset every replica of the in-sync set acknowledged, and never less than the start of
its own epoch (what it held when elected is the group's history).

The store caps reads with :attr:`MessageStore.read_limit`; this module holds back the "a message
arrived" notice for held pulls until the message is readable, then gives it in arrival order::

    dispatch ─▶ arrived(topic, queue, max offset, tags) ─▶ pending (commitlog end, notice)
    slave acknowledgement / in-sync set change ─▶ release() ─▶ tell(notice) for each end <= limit
"""

from __future__ import annotations

import collections
from collections.abc import Callable

Tell = Callable[[str, int, int, "int | None"], None]
"""A notice for held pulls: topic, queue id, the queue's new max offset, tags code."""


class ConfirmedArrivals:
    """Example::

        gate = ConfirmedArrivals(limit=lambda: 100, written=lambda: 150, tell=print)
        gate.arrived("T", 0, 7, None)   # held: the record ends at 150, past the limit
    """

    def __init__(self, limit: Callable[[], int | None], written: Callable[[], int], tell: Tell) -> None:
        self.limit = limit
        """The confirm offset now; None when reads are not limited (not a controller-mode master)."""
        self.written = written
        """The commitlog's end: a notice given right after a put covers a record ending there or before."""
        self.tell = tell
        self._pending: collections.deque[tuple[int, str, int, int, int | None]] = collections.deque()

    def __len__(self) -> int:
        return len(self._pending)

    def arrived(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None) -> None:
        """A record was dispatched (on the loop, right after its put): tell now if readable, else later."""
        limit = self.limit()
        end = self.written()
        if not self._pending and (limit is None or end <= limit):
            self.tell(topic, queue_id, max_offset, tags_code)
            return
        self._pending.append((end, topic, queue_id, max_offset, tags_code))
        self.release()

    def release(self) -> int:
        """The limit may have moved: give every held notice now readable, oldest first; how many."""
        pending = self._pending
        if not pending:
            return 0
        limit = self.limit()
        n = 0
        while pending and (limit is None or pending[0][0] <= limit):
            _, topic, queue_id, max_offset, tags_code = pending.popleft()
            self.tell(topic, queue_id, max_offset, tags_code)
            n += 1
        return n
