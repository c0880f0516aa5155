"""A consumer's per-queue state (Java's ``ProcessQueue``): pulled messages not yet done.

A :class:`ProcessQueue` holds the messages pulled from one queue and not yet consumed (push
consumer) or polled (lite pull consumer), ordered by queue offset, and the flags the pull loop,
the consume services and rebalance share. It is a
state object: it never awaits and never does I/O, so every decision that depends on it is a plain
function call, tested without a broker.

Offsets (concurrent mode): the offset to commit is the smallest offset still held, because
everything below it is done; when nothing is held it is one past the largest offset ever put.
So messages 1001..1010 all done → 1011; 1001 stuck while 1002..1010 are done → 1001 (a stuck
message holds the commit point back; on restart the group re-reads from it — at-least-once).

Orderly mode: :meth:`take_messages` moves the first messages (in offset order) to a *consuming*
table; :meth:`commit` forgets them and answers the next offset; :meth:`make_messages_to_consume_again`
puts them back. ``consume_locked`` is the process queue's consume lock: set while a listener runs
on the queue, so rebalance does not give the broker lock away in the middle of a batch.

Invariants: ``msg_count`` and ``msg_size`` always equal the count and body sizes of the held
messages (the table plus, in orderly mode, the consuming table); a dropped queue stays dropped.
"""

from __future__ import annotations

import bisect
import operator
import time
from dataclasses import dataclass, field

from pyrocketmq.remoting.message import MessageExt, Prop


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class ProcessQueue:
    """Pulled, not yet consumed messages of one queue, by offset (see the module docstring).

    Example::

        pq = ProcessQueue()
        pq.put_messages(msgs)            # from a pull
        offset = pq.remove_messages(done)  # after the listener: the offset to commit
    """

    _offsets: list[int] = field(default_factory=list)
    _msgs: dict[int, MessageExt] = field(default_factory=dict)
    _consuming: dict[int, MessageExt] = field(default_factory=dict)
    _consume_start: dict[int, int] = field(default_factory=dict)
    msg_count: int = 0
    msg_size: int = 0
    queue_offset_max: int = -1
    dropped: bool = False
    #: Orderly: the broker lock is held (renewed at ``last_lock_ms``).
    locked: bool = False
    last_lock_ms: int = 0
    #: Orderly: a consume request is scheduled or running for this queue.
    consuming: bool = False
    #: Orderly: the consume lock (a listener call runs on this queue now).
    consume_locked: bool = False
    try_unlock_times: int = 0
    last_pull_ms: int = field(default_factory=now_ms)
    last_consume_ms: int = field(default_factory=now_ms)

    # -- filling and emptying ---------------------------------------------------------------------
    def put_messages(self, msgs: list[MessageExt]) -> bool:
        """Add pulled messages (offsets already held are ignored); True when an orderly consume
        request should be dispatched (there are messages and none is scheduled yet)."""
        offsets, held, consuming = self._offsets, self._msgs, self._consuming
        offs = [m.queue_offset for m in msgs]
        if offs and offs[0] > self.queue_offset_max and all(map(operator.lt, offs, offs[1:])):
            # a pull's answer, past everything put before: append it whole
            offsets.extend(offs)
            held.update(zip(offs, msgs, strict=True))
            self.msg_count += len(offs)
            self.msg_size += sum(len(m.body) for m in msgs)
            self.queue_offset_max = offs[-1]
            msgs = []
        count = size = 0
        for msg in msgs:
            off = msg.queue_offset
            if off in held or off in consuming:
                continue
            if not offsets or off > offsets[-1]:
                offsets.append(off)  # pulls come in offset order: no search
            else:
                bisect.insort(offsets, off)
            held[off] = msg
            count += 1
            size += len(msg.body)
        if count:
            self.msg_count += count
            self.msg_size += size
            self.queue_offset_max = max(self.queue_offset_max, offsets[-1])
        if self._msgs and not self.consuming:
            self.consuming = True
            return True
        return False

    def remove_messages(self, msgs: list[MessageExt]) -> int:
        """Forget consumed messages; the offset to commit (-1 when nothing was held at all).

        >>> from pyrocketmq.remoting.message import MessageExt
        >>> pq = ProcessQueue()
        >>> ms = [MessageExt(queue_offset=o, body=b"x") for o in range(5, 8)]
        >>> _ = pq.put_messages(ms)
        >>> pq.remove_messages(ms[1:]), pq.remove_messages(ms[:1])
        (5, 8)
        """
        if not self._msgs:
            return -1
        held, offsets, started = self._msgs, self._offsets, self._consume_start
        removed: list[int] = []
        size = 0
        for msg in msgs:
            off = msg.queue_offset
            gone = held.pop(off, None)
            if gone is None:
                continue
            removed.append(off)
            size += len(gone.body)
            if started:
                started.pop(off, None)
        self.msg_count -= len(removed)
        self.msg_size -= size
        if len(removed) == 1:
            i = bisect.bisect_left(offsets, removed[0])
            if i < len(offsets) and offsets[i] == removed[0]:
                del offsets[i]
        elif removed:  # a batch: the first held offsets (cut them at once), or any (keep what is held)
            k = len(removed)
            if sorted(removed) == offsets[:k]:
                del offsets[:k]
            else:
                offsets[:] = [o for o in offsets if o in held]
        return self._offsets[0] if self._offsets else self.queue_offset_max + 1

    def commit_offset(self) -> int:
        """The offset a concurrent consumer may commit now (-1 when nothing was ever pulled)."""
        if self._offsets:
            return self._offsets[0]
        return self.queue_offset_max + 1 if self.queue_offset_max >= 0 else -1

    def clear(self) -> None:
        """Forget everything held (a reset or a moved offset)."""
        self._offsets.clear()
        self._msgs.clear()
        self._consuming.clear()
        self._consume_start.clear()
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = -1

    # -- flow control -----------------------------------------------------------------------------
    @property
    def max_span(self) -> int:
        """Offset distance between the first and last held messages (0 when at most one)."""
        return self._offsets[-1] - self._offsets[0] if len(self._offsets) > 1 else 0

    @property
    def messages(self) -> list[MessageExt]:
        return [self._msgs[o] for o in self._offsets]

    def has_messages(self) -> bool:
        return bool(self._msgs) or bool(self._consuming)

    # -- consume timeout (concurrent) -------------------------------------------------------------
    def mark_consume_start(self, msgs: list[MessageExt], at_ms: int | None = None) -> None:
        """Note when the listener got ``msgs`` (also the CONSUME_START_TIME property, as Java sets)."""
        t = now_ms() if at_ms is None else at_ms
        for msg in msgs:
            self._consume_start[msg.queue_offset] = t
            msg.properties[Prop.CONSUME_START_TIME] = str(t)
        self.last_consume_ms = t

    def expired_messages(
        self, timeout_ms: int, at_ms: int | None = None, limit: int = 16
    ) -> list[MessageExt]:
        """Held messages whose listener call started more than ``timeout_ms`` ago, oldest offsets first."""
        t = now_ms() if at_ms is None else at_ms
        out: list[MessageExt] = []
        for off in self._offsets:
            start = self._consume_start.get(off)
            if start is not None and t - start > timeout_ms:
                out.append(self._msgs[off])
                if len(out) >= limit:
                    break
        return out

    # -- orderly ----------------------------------------------------------------------------------
    def take_messages(self, n: int) -> list[MessageExt]:
        """Move the first ``n`` held messages (offset order) to the consuming table; empty → the
        consume request ends (``consuming`` becomes False)."""
        out: list[MessageExt] = []
        self.last_consume_ms = now_ms()
        while self._offsets and len(out) < n:
            off = self._offsets.pop(0)
            msg = self._msgs.pop(off)
            self._consuming[off] = msg
            out.append(msg)
        if not out:
            self.consuming = False
        return out

    def commit(self) -> int:
        """Orderly: the taken messages are done; the offset to commit next (-1 if none was taken)."""
        if not self._consuming:
            return -1
        last = max(self._consuming)
        for msg in self._consuming.values():
            self.msg_count -= 1
            self.msg_size -= len(msg.body)
        self._consuming.clear()
        return last + 1

    def make_messages_to_consume_again(self, msgs: list[MessageExt]) -> None:
        """Orderly: put taken messages back in front of the others (a SUSPEND)."""
        for msg in msgs:
            off = msg.queue_offset
            if self._consuming.pop(off, None) is not None:
                bisect.insort(self._offsets, off)
                self._msgs[off] = msg

    def lock_expired(self, expiry_ms: int, at_ms: int | None = None) -> bool:
        return ((now_ms() if at_ms is None else at_ms) - self.last_lock_ms) > expiry_ms

    def pull_expired(self, expiry_ms: int = 120_000, at_ms: int | None = None) -> bool:
        return ((now_ms() if at_ms is None else at_ms) - self.last_pull_ms) > expiry_ms

    def info(self, commit_offset: int) -> dict[str, object]:
        """Java ``ProcessQueueInfo`` for GET_CONSUMER_RUNNING_INFO."""
        offs = self._offsets
        return {
            "commitOffset": commit_offset,
            "cachedMsgMinOffset": offs[0] if offs else 0,
            "cachedMsgMaxOffset": offs[-1] if offs else 0,
            "cachedMsgCount": self.msg_count,
            "cachedMsgSizeInMiB": self.msg_size // (1024 * 1024),
            "transactionMsgMinOffset": 0,
            "transactionMsgMaxOffset": 0,
            "transactionMsgCount": len(self._consuming),
            "locked": self.locked,
            "tryUnlockTimes": self.try_unlock_times,
            "lastLockTimestamp": self.last_lock_ms,
            "droped": self.dropped,
            "lastPullTimestamp": self.last_pull_ms,
            "lastConsumeTimestamp": self.last_consume_ms,
        }


def flow_control(
    pq: ProcessQueue, *, max_count: int, max_mib: int, max_span: int, orderly: bool
) -> str | None:
    """Why ``pq`` must not be pulled now (``"count"``, ``"size"``, ``"span"``), or None.

    >>> flow_control(ProcessQueue(msg_count=1001), max_count=1000, max_mib=100, max_span=2000, orderly=False)
    'count'
    """
    if pq.msg_count > max_count:
        return "count"
    if pq.msg_size > max_mib * 1024 * 1024:
        return "size"
    if not orderly and pq.max_span > max_span:
        return "span"
    return None
