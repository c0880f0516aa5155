"""Bookkeeping of the master side of replication (pure: no sockets, no clock of its own).

``AckTable`` holds, per connected slave, the highest commitlog offset it acknowledged, and the
senders waiting for a SYNC_MASTER acknowledgement: a waiter for offset ``o`` (the end of its
message) is woken with ``True`` as soon as any slave acknowledges ``>= o``, or with ``False``
when ``expire(now)`` passes its deadline. Invariants: ``acked`` never decreases while a slave
stays connected; every waiter is woken exactly once; waking is O(log n) per waiter (heaps by
offset and by deadline), so nothing polls per message.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

Wake = Callable[[bool], None]


class AckTable:
    """Example::

        t = AckTable(); t.connect("s1"); t.wait(100, deadline=5.0, wake=print)
        t.ack("s1", 120)   # prints True
    """

    def __init__(self) -> None:
        self.slaves: dict[object, int] = {}
        """slave key → highest offset it acknowledged (-1 before its first report)."""
        self._by_offset: list[tuple[int, int]] = []
        self._by_deadline: list[tuple[float, int]] = []
        self._waiters: dict[int, Wake] = {}
        self._seq = itertools.count()
        self.replica_of: dict[object, int] = {}
        """slave key → replica id, for slaves that named themselves (controller mode)."""
        self.heard_at: dict[object, float] = {}
        """slave key → when it last reported (the caller's clock, see :meth:`heard`)."""
        self.required: frozenset[int] | None = None
        """Controller mode: the replica ids that must all hold a message before it is acknowledged
        (the in-sync set without the master); None = any one connected slave suffices (4.x)."""
        self.on_progress: Callable[[], object] | None = None
        """Called after each acknowledgement and in-sync set change (the confirm offset may have moved)."""

    # -- slaves ---------------------------------------------------------------------------------
    def connect(self, key: object) -> None:
        self.slaves[key] = -1

    def disconnect(self, key: object) -> None:
        self.slaves.pop(key, None)
        self.replica_of.pop(key, None)
        self.heard_at.pop(key, None)

    def heard(self, key: object, now: float) -> None:
        """The slave of ``key`` reported (or connected) at ``now``."""
        self.heard_at[key] = now

    def linked(self, now: float, within: float) -> set[int]:
        """The replica ids of the slaves heard from in the last ``within`` seconds: a link whose peer
        went silent (a cut cable leaves the socket open) does not count."""
        return {
            rid
            for key, rid in self.replica_of.items()
            if now - self.heard_at.get(key, float("-inf")) <= within
        }

    def identify(self, key: object, replica_id: int) -> None:
        self.replica_of[key] = replica_id

    def acked_by_replica(self) -> dict[int, int]:
        """Replica id → highest offset it acknowledged, for the connected slaves that named themselves."""
        out: dict[int, int] = {}
        for key, rid in self.replica_of.items():
            out[rid] = max(out.get(rid, -1), self.slaves.get(key, -1))
        return out

    def set_required(self, required: frozenset[int] | None) -> int:
        """Change whose acknowledgements count; wakes the waiters that now hold. How many woke."""
        self.required = required
        return self._progressed()

    @property
    def progress(self) -> int:
        """Highest offset acknowledged as the mode requires (see ``required``)."""
        if self.required is None:
            return self.acked
        if not self.required:
            return 1 << 62
        acks = self.acked_by_replica()
        return min(acks.get(r, -1) for r in self.required)

    @property
    def connected(self) -> int:
        return len(self.slaves)

    @property
    def acked(self) -> int:
        """Highest offset any connected slave holds (-1 with none)."""
        return max(self.slaves.values(), default=-1)

    def ack(self, key: object, offset: int) -> int:
        """Record a slave's report; wakes every waiter at or below it. Returns how many woke."""
        if offset > self.slaves.get(key, -1):
            self.slaves[key] = offset
        return self._progressed()

    def _progressed(self) -> int:
        """Acknowledgements or their rule changed: wake the waiters that now hold, tell ``on_progress``."""
        woken = self._wake_upto(self.progress)
        if self.on_progress is not None:
            self.on_progress()
        return woken

    def _wake_upto(self, best: int) -> int:
        heap = self._by_offset
        woken = 0
        while heap and heap[0][0] <= best:
            _, seq = heapq.heappop(heap)
            wake = self._waiters.pop(seq, None)
            if wake is not None:
                wake(True)
                woken += 1
        return woken

    # -- waiters --------------------------------------------------------------------------------
    def wait(self, offset: int, deadline: float, wake: Wake) -> None:
        """Call ``wake(True)`` once a slave holds ``offset``, ``wake(False)`` at ``deadline``."""
        if self.progress >= offset:
            wake(True)
            return
        seq = next(self._seq)
        self._waiters[seq] = wake
        heapq.heappush(self._by_offset, (offset, seq))
        heapq.heappush(self._by_deadline, (deadline, seq))

    def next_deadline(self) -> float | None:
        heap = self._by_deadline
        while heap and heap[0][1] not in self._waiters:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def expire(self, now: float) -> int:
        """Wake with ``False`` every waiter whose deadline is ``<= now``; how many."""
        heap = self._by_deadline
        n = 0
        while heap and heap[0][0] <= now:
            _, seq = heapq.heappop(heap)
            wake = self._waiters.pop(seq, None)
            if wake is not None:
                wake(False)
                n += 1
        return n

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def fail_all(self) -> None:
        """Wake every waiter with ``False`` (shutdown)."""
        waiters, self._waiters = self._waiters, {}
        self._by_offset.clear()
        self._by_deadline.clear()
        for wake in waiters.values():
            wake(False)
