"""POP consumption over the store: receive with an invisible duration, ack, change invisible
duration, redelivery after the invisibility ends, dead letters after the last attempt.

The state lives in :class:`~.pop_state.PopTable` (pure); this module reads the store, keeps the
group's consumer offset equal to the table's ``base`` (so consumerProgress shows POP lag as it
shows 4.x lag), persists the table to ``config/popState.json`` and wakes long-polling receives when
a topic gets a message. A message that used its last attempt goes to the group's DLQ through the
broker's own send-back path (CONSUMER_SEND_MSG_BACK with delay level -1), as a 4.x one does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import MessageDecodeError, MessageExt, decode_message
from pyrocketmq.server.config_file import load_json_file, write_json_file

from ..store.values import GetMessageStatus
from .pop_state import Handle, Lease, PopTable, QueuePop

if TYPE_CHECKING:
    from ..consumer_offset import ConsumerOffsetManager
    from ..store.message_store import MessageStore

log = logging.getLogger("pyrocketmq.broker.proxy")

SendBack = Callable[[RemotingCommand], Awaitable[RemotingCommand | None]]


@dataclass(frozen=True, slots=True)
class Filter:
    """What a receive lets through: tag codes (None = every tag) and/or a record test (SQL92)."""

    tag_codes: frozenset[int] | None = None
    record: Callable[[memoryview], bool] | None = None

    def tag_test(self) -> Callable[[int], bool] | None:
        codes = self.tag_codes
        return None if codes is None else codes.__contains__


@dataclass(frozen=True, slots=True)
class Popped:
    message: MessageExt
    handle: Handle
    lease: Lease


class PopService:
    def __init__(self, store: MessageStore, offsets: ConsumerOffsetManager, path: str, broker_name: str,
                 send_back: SendBack) -> None:
        self.store = store
        self.offsets = offsets
        self.path = path
        self.broker_name = broker_name
        self.send_back = send_back
        self.table = PopTable()
        self._waiters: dict[str, asyncio.Event] = {}

    # -- persistence ----------------------------------------------------------------------------
    def load(self) -> None:
        doc = load_json_file(self.path)
        if doc:
            self.table = PopTable.from_dict(doc)

    def persist(self, force: bool = False) -> None:
        if self.table.dirty or force:
            self.table.dirty = False
            write_json_file(self.path, self.table.to_dict())

    # -- long polling ---------------------------------------------------------------------------
    def wake(self, topic: str) -> None:
        """A message reached ``topic`` (the store's dispatch hook): wake receives waiting on it."""
        event = self._waiters.get(topic)
        if event is not None:
            event.set()

    async def wait(self, topic: str, timeout: float) -> None:
        event = self._waiters.get(topic)
        if event is None:
            event = self._waiters[topic] = asyncio.Event()
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            if event.is_set():
                self._waiters.pop(topic, None)

    # -- the state of one queue -----------------------------------------------------------------
    def _queue(self, group: str, topic: str, queue_id: int) -> QueuePop:
        q = self.table.get((group, topic, queue_id))
        if q is None:
            committed = self.offsets.query(group, topic, queue_id)
            if committed < 0:
                # a new group starts at the queue's beginning while it still has it all (a young
                # queue, as 4.x CONSUME_FROM_LAST_OFFSET on a fresh broker), else at its end
                low = self.store.get_min_offset_in_queue(topic, queue_id)
                committed = 0 if low == 0 else self.store.get_max_offset_in_queue(topic, queue_id)
            q = self.table.open((group, topic, queue_id), committed)
        low = self.store.get_min_offset_in_queue(topic, queue_id)
        if q.base < low:
            q.restart_at(low)
        return q

    def _committed(self, group: str, topic: str, queue_id: int, q: QueuePop, before: int) -> None:
        if q.base != before:
            self.offsets.commit(group, topic, queue_id, q.base)
        self.table.dirty = True

    def _read(self, topic: str, queue_id: int, offset: int) -> MessageExt | None:
        result = self.store.get_message("", topic, queue_id, offset, 1)
        if not result.buffers:
            return None
        try:
            return decode_message(result.buffers[0])[0]
        except MessageDecodeError:
            return None

    # -- receive ----------------------------------------------------------------------------------
    def take(
        self,
        group: str,
        topic: str,
        queue_id: int,
        want: int,
        *,
        invisible_ms: int,
        fifo: bool,
        max_attempts: int,
        flt: Filter,
        now_ms: int | None = None,
    ) -> tuple[list[Popped], list[MessageExt]]:
        """Up to ``want`` messages of one queue leased now, and the messages whose attempts ran out
        (already taken off the queue: the caller dead-letters them)."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        q = self._queue(group, topic, queue_id)
        before = q.base
        out: list[Popped] = []
        dead: list[MessageExt] = []
        try:
            if fifo and q.held(now):
                return out, dead
            for offset in q.expired(now):
                if len(out) >= want:
                    return out, dead
                msg = self._read(topic, queue_id, offset)
                if msg is None:
                    q.done(offset)
                elif q.inflight[offset].attempt >= max_attempts:
                    q.done(offset)
                    dead.append(msg)
                else:
                    out.append(self._popped(q, msg, now, invisible_ms))
            if len(out) >= want or (fifo and out):
                return out, dead
            result = self.store.get_message(group, topic, queue_id, q.next, want - len(out),
                                            tag_filter=flt.tag_test(), record_filter=flt.record)
            if result.status in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY):
                if result.next_begin_offset > q.next:
                    q.restart_at(result.next_begin_offset)
                return out, dead
            for buf in result.buffers:
                try:
                    msg = decode_message(buf)[0]
                except MessageDecodeError as e:
                    log.warning("POP of %s/%d: a stored record does not decode: %s", topic, queue_id, e)
                    continue
                out.append(self._popped(q, msg, now, invisible_ms))
            if result.next_begin_offset > q.next:
                q.skip_to(result.next_begin_offset)
            return out, dead
        finally:
            self._committed(group, topic, queue_id, q, before)

    def _popped(self, q: QueuePop, msg: MessageExt, now: int, invisible_ms: int) -> Popped:
        lease = q.lease(msg.queue_offset, now, invisible_ms, self.table.nonce(now))
        handle = Handle(msg.topic, msg.queue_id, msg.queue_offset, lease.nonce, self.broker_name)
        return Popped(msg, handle, lease)

    async def dead_letter(self, group: str, messages: Sequence[MessageExt]) -> None:
        for msg in messages:
            fields = {"offset": str(msg.commitlog_offset), "group": group, "delayLevel": "-1",
                      "originMsgId": msg.msg_id, "originTopic": msg.topic, "unitMode": "false",
                      "maxReconsumeTimes": "0"}
            resp = await self.send_back(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, fields))
            if resp is None or resp.code != ResponseCode.SUCCESS:
                log.warning("dead-lettering %s of %s for %s failed: %s", msg.msg_id, msg.topic, group,
                            "no answer" if resp is None else resp.remark)

    # -- settle ----------------------------------------------------------------------------------
    def ack(self, group: str, handle: Handle) -> bool:
        q = self.table.get((group, handle.topic, handle.queue_id))
        if q is None:
            return False
        before = q.base
        ok = q.ack(handle.offset, handle.nonce)
        if ok:
            self._committed(group, handle.topic, handle.queue_id, q, before)
        return ok

    def change(
        self, group: str, handle: Handle, invisible_ms: int, now_ms: int | None = None
    ) -> Handle | None:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        q = self.table.get((group, handle.topic, handle.queue_id))
        if q is None:
            return None
        lease = q.change(handle.offset, handle.nonce, now, invisible_ms, self.table.nonce(now))
        if lease is None:
            return None
        self.table.dirty = True
        return Handle(handle.topic, handle.queue_id, handle.offset, lease.nonce, handle.broker)

    def extend(self, group: str, handle: Handle, deadline_ms: int) -> bool:
        """Push a held lease's deadline out, same nonce (auto-renewal: the client's handle stays
        valid); False when the lease is no longer held under that handle."""
        q = self.table.get((group, handle.topic, handle.queue_id))
        lease = None if q is None else q.inflight.get(handle.offset)
        if lease is None or lease.nonce != handle.nonce:
            return False
        if deadline_ms > lease.deadline_ms:
            lease.deadline_ms = deadline_ms
            self.table.dirty = True
        return True

    def take_for_dlq(self, group: str, handle: Handle) -> MessageExt | None:
        """The message a client forwards to the DLQ (FIFO push consumers), taken off its queue."""
        q = self.table.get((group, handle.topic, handle.queue_id))
        if q is None:
            return None
        lease = q.inflight.get(handle.offset)
        if lease is None or lease.nonce != handle.nonce:
            return None
        msg = self._read(handle.topic, handle.queue_id, handle.offset)
        before = q.base
        q.done(handle.offset)
        self._committed(group, handle.topic, handle.queue_id, q, before)
        return msg

    def inflight_by_group(self) -> dict[tuple[str, str], int]:
        """Messages in flight per (group, topic); every POP group of a topic appears, 0 included."""
        out: dict[tuple[str, str], int] = {}
        for (group, topic, _qid), q in self.table.queues.items():
            out[(group, topic)] = out.get((group, topic), 0) + len(q.inflight)
        return out

    def attempts(self, group: str, topic: str, queue_id: int, offset: int) -> int:
        q = self.table.get((group, topic, queue_id))
        lease = None if q is None else q.inflight.get(offset)
        return 0 if lease is None else lease.attempt
