"""SYNC_FLUSH answers: sends waiting, on the event loop, for the commitlog to be durable past them.

One queue per broker instead of one flush request, one timer and one flush-thread callback per
message::

    loop: put ─▶ hold(end, ...) or wait(end, response) ─▶ queue (end, deadline, whom, response); flush_to(end)
    flush thread: one fdatasync covering every end asked so far ─▶ on_durable(offset, ok)
    loop (one call_soon_threadsafe per sync): answer every queued send whose end <= offset

``flush_to`` only raises a number and sets an event that is not already set, so a send costs the
loop a deque append; the flush thread tells the loop once per sync whatever the group's size.
Ends enter the queue in append order (the loop puts and queues in one step), so answering pops
from the left. A failed sync answers the sends it was meant to cover with FLUSH_DISK_TIMEOUT at
once; a send whose flush takes longer than ``timeout`` gets the same answer from the one timer
armed for the oldest send. Either way the message stays stored, as in RocketMQ. A cut of the log
(failover) answers the sends past the cut the same way: their messages are gone.

``hold`` is the cheap form for a plain SYNC_FLUSH send: the connection keeps the request
(:meth:`Connection.hold`) and the drain answers it directly, with no future, done-callback or extra
loop callback per message; ``wait`` gives a future for a caller that combines it (SYNC_MASTER).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.transport import Connection

log = logging.getLogger("pyrocketmq.broker")


def mark_flush_timeout(response: RemotingCommand) -> None:
    response.code = ResponseCode.FLUSH_DISK_TIMEOUT
    response.remark = "flush disk timeout"


Held = tuple[Connection, RemotingCommand, float]
"""A request its connection keeps (:meth:`Connection.hold`): connection, request, token."""
Whom = asyncio.Future[RemotingCommand] | Held
Entry = tuple[int, float, Whom, RemotingCommand]


def _give(whom: Whom, response: RemotingCommand) -> None:
    if isinstance(whom, tuple):
        conn, cmd, token = whom
        conn.answer(cmd, response, token)
    elif not whom.done():
        whom.set_result(response)


def _given(whom: Whom) -> bool:
    return not isinstance(whom, tuple) and whom.done()


class DurableWaiters:
    """The sends of one broker waiting for their flush, answered in order of their end offset."""

    def __init__(self, flush_to: Callable[[int], None], timeout: float) -> None:
        self._flush_to = flush_to
        self.timeout = timeout
        self._queue: collections.deque[Entry] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        # written by the flush thread, read by the loop (plain attributes: each write is atomic)
        self._durable = 0
        self._failed_through = 0
        self._drain_scheduled = False

    def __len__(self) -> int:
        return len(self._queue)

    def hold(self, end: int, conn: Connection, cmd: RemotingCommand, response: RemotingCommand) -> bool:
        """Answer ``cmd`` on ``conn`` with ``response`` once the commitlog is durable up to ``end``
        (True: held, the handler returns None); False when a sync already covered it (answer now)."""
        loop = self._bound_loop()
        if end <= self._durable:
            return False
        self._enqueue(loop, end, (conn, cmd, conn.hold(cmd)), response)
        return True

    def wait(self, end: int, response: RemotingCommand) -> asyncio.Future[RemotingCommand]:
        """A future answered with ``response`` once the commitlog is durable up to ``end`` (on the loop)."""
        loop = self._bound_loop()
        fut: asyncio.Future[RemotingCommand] = loop.create_future()
        if end <= self._durable:  # a sync already covered it (its drain has run or sees the queue)
            fut.set_result(response)
        else:
            self._enqueue(loop, end, fut, response)
        return fut

    def _bound_loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        return loop

    def _enqueue(
        self, loop: asyncio.AbstractEventLoop, end: int, whom: Whom, response: RemotingCommand
    ) -> None:
        self._queue.append((end, loop.time() + self.timeout, whom, response))
        if self._timer is None:
            self._timer = loop.call_later(self.timeout, self._expire)
        self._flush_to(end)

    # -- the flush thread ---------------------------------------------------------------------
    def on_durable(self, offset: int, ok: bool, attempted: int) -> None:
        """After each commitlog sync (flush thread): durable up to ``offset``; ``ok`` False when the
        sync meant to reach ``attempted`` failed."""
        if offset > self._durable:
            self._durable = offset
        if not ok and attempted > self._failed_through:
            self._failed_through = attempted
        loop = self._loop
        if loop is not None and not self._drain_scheduled:
            # benign race: the loop clears the flag *before* draining, so an offset raised while
            # the flag still reads True is seen by the drain already scheduled
            self._drain_scheduled = True
            try:
                loop.call_soon_threadsafe(self._drain)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                pass

    # -- back on the loop ---------------------------------------------------------------------
    def _drain(self) -> None:
        self._drain_scheduled = False
        durable, failed = self._durable, self._failed_through
        queue = self._queue
        while queue:
            end, _deadline, whom, response = queue[0]
            if end <= durable:
                pass
            elif end <= failed:
                log.warning("flush to disk failed (commitlog offset %d)", end)
                mark_flush_timeout(response)
            else:
                break
            queue.popleft()
            _give(whom, response)

    def on_cut(self, offset: int) -> None:
        """The log was cut at ``offset`` (a master stepping down; on the loop): what was durable is
        answered, a send past the cut gets FLUSH_DISK_TIMEOUT now (its message is gone), and an offset
        past the cut no longer counts as durable (new messages will be written there)."""
        self._drain()
        self._durable = min(self._durable, offset)
        self._failed_through = min(self._failed_through, offset)
        kept: collections.deque[Entry] = collections.deque()
        cut = 0
        for entry in self._queue:
            end, _deadline, whom, response = entry
            if end <= offset:
                kept.append(entry)
            elif not _given(whom):
                cut += 1
                mark_flush_timeout(response)
                _give(whom, response)
        self._queue = kept
        if cut:
            log.warning(
                "the commitlog was cut at offset %d: %d waiting send(s) past it answered FLUSH_DISK_TIMEOUT",
                offset,
                cut,
            )

    def _expire(self) -> None:
        """The timer of the oldest send: answer every send past its deadline, re-arm for the next."""
        self._timer = None
        loop = self._loop
        assert loop is not None
        self._drain()
        now = loop.time()
        queue = self._queue
        while queue and queue[0][1] <= now:
            end, _deadline, whom, response = queue.popleft()
            if not _given(whom):
                log.warning("flush to disk timed out for commitlog offset %d", end)
                mark_flush_timeout(response)
                _give(whom, response)
        if queue:
            self._timer = loop.call_at(queue[0][1], self._expire)
