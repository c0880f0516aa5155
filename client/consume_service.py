"""How a push consumer hands pulled messages to its listener: concurrently or in queue order.

- :class:`ConcurrentConsumeService` (Java ``ConsumeMessageConcurrentlyService``): every pulled batch
  is split into listener calls of ``consume.batch_size`` messages, run at most ``consume.workers``
  at a time (a plain function on a thread pool, a coroutine function on the loop). SUCCESS removes
  the messages from the process queue and moves the queue's offset to the smallest offset still
  held. RECONSUME_LATER (or an exception, or None) sends each message back with
  CONSUMER_SEND_MSG_BACK (delay level 0: the broker picks 3 + reconsumeTimes); if that fails the
  message is sent to ``%RETRY%<group>`` directly; if that fails too, it stays in the process queue
  and is consumed again locally after ``consume.resubmit_delay`` seconds. In BROADCASTING mode
  failures are only logged (Java drops them too). A message whose listener call has run longer than
  ``consume.timeout_minutes`` is sent back and removed, so one hung call cannot hold the offset.
- :class:`OrderlyConsumeService` (Java ``ConsumeMessageOrderlyService``): one consume request at a
  time per queue (a local lock per queue), only while the broker lock of the queue is held and not
  older than ``rebalance.lock_expiry`` (clustering); messages taken in offset order; the process
  queue's consume lock is set while the listener runs. SUSPEND_CURRENT_QUEUE_A_MOMENT puts the
  batch back and tries again after ``consume.suspend_ms`` (counting reconsume times locally); a
  message that reached the max reconsume times is sent back with delay level -1 (straight to
  ``%DLQ%<group>``) and the offset moves past it.

Invariants: a listener's outcome never touches a dropped process queue's offset (concurrent mode;
in orderly mode the consumer still holds the broker lock until the consume lock is free, so the
outcome of the last batch is recorded); no listener call starts after :meth:`stop`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import ConsumerSendMsgBackRequestHeader
from pyrocketmq.remoting.message import MessageExt, Prop, encode_properties

from .errors import MQError
from .process_queue import ProcessQueue
from .push_parts import ConsumerParts
from .rebalance import BROADCASTING, retry_topic
from .request_errors import check_response
from .send_payload import Payload, build_send_header, send_result_from_response
from .tasks import TaskSet
from .trace import ConsumeTrace

log = logging.getLogger("pyrocketmq.client")

INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
MAX_TIME_CONSUME_CONTINUOUSLY = 60.0


class ConsumeResult(StrEnum):
    """What a listener answers. Concurrent listeners: SUCCESS or RECONSUME_LATER; orderly
    listeners: SUCCESS or SUSPEND_CURRENT_QUEUE_A_MOMENT (each mode reads the other's failure
    value as its own)."""

    SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


@dataclass(slots=True)
class ConsumeContext:
    """Given to a listener with its messages; a listener may change the ``*_next_*`` fields.

    ``delay_level_when_next_consume`` (concurrent): 0 lets the broker choose (3 + reconsume
    times), > 0 forces a delay level, -1 sends failed messages straight to the DLQ.
    ``suspend_ms`` (orderly): the pause after SUSPEND (-1: the consumer's setting).
    """

    queue: MessageQueue
    delay_level_when_next_consume: int = 0
    suspend_ms: int = -1


Listener = Callable[..., Any]


def _arity(listener: Listener) -> int:
    try:
        params = inspect.signature(listener).parameters.values()
    except (TypeError, ValueError):
        return 2
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 2
    return 1 if len(positional) == 1 else 2


class ListenerRunner:
    """Runs a listener the way it wants to run: a coroutine on the loop, a function on a thread pool."""

    def __init__(self, listener: Listener, workers: int) -> None:
        self.listener = listener
        self.arity = _arity(listener)
        self.is_coroutine = inspect.iscoroutinefunction(listener)
        self.executor: ThreadPoolExecutor | None = None if self.is_coroutine else ThreadPoolExecutor(
            max_workers=max(1, workers), thread_name_prefix="pyrocketmq-consume"
        )
        self.slots = asyncio.Semaphore(max(1, workers))

    def _call(self, msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
        return self.listener(msgs) if self.arity == 1 else self.listener(msgs, ctx)

    async def run(self, msgs: list[MessageExt], ctx: ConsumeContext, failure: ConsumeResult) -> ConsumeResult:
        """The listener's answer; an exception or an unknown value counts as ``failure``."""
        try:
            if self.executor is None:
                result = await self._call(msgs, ctx)
            else:
                result = await asyncio.get_running_loop().run_in_executor(
                    self.executor, self._call, msgs, ctx
                )
                if inspect.isawaitable(result):
                    result = await result
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("listener failed on %d message(s) of %s; they will be consumed again",
                        len(msgs), ctx.queue, exc_info=True)
            return failure
        if isinstance(result, ConsumeResult):
            return result
        if isinstance(result, str):
            with contextlib.suppress(ValueError):
                return ConsumeResult(result)
            if result == "SUCCESS":
                return ConsumeResult.SUCCESS
        return failure

    def shutdown(self, wait: bool = True) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=wait, cancel_futures=True)


class ConsumeServiceBase:
    """What both consume services share: the listener runner, their tasks, sending messages back.

    A consume service knows the consumer only through :class:`~.push_parts.ConsumerParts`; the
    fetcher calls :meth:`submit` with what it pulled.
    """

    orderly: bool

    def __init__(self, parts: ConsumerParts, listener: Listener) -> None:
        self.parts = parts
        self.runner = ListenerRunner(listener, parts.settings.consume.workers)
        self.tasks = TaskSet()

    @property
    def stopped(self) -> bool:
        return not self.tasks.open

    async def _run(
        self, msgs: list[MessageExt], ctx: ConsumeContext, failure: ConsumeResult
    ) -> ConsumeResult:
        """The listener call, traced (SubBefore, SubAfter) when the consumer writes traces."""
        tracer = self.parts.tracer
        if tracer is None:
            return await self.runner.run(msgs, ctx, failure)
        started = time.monotonic()
        items = tuple((m.msg_id, m.reconsume_times, " ".join(m.keys)) for m in msgs)
        before = ConsumeTrace(self.parts.group, uuid.uuid4().hex, items, int(time.time() * 1000))
        tracer.add(before)
        status = await self.runner.run(msgs, ctx, failure)
        cost = int((time.monotonic() - started) * 1000)
        tracer.add(replace(before, after=(cost, status is ConsumeResult.SUCCESS, int(time.time() * 1000))))
        return status

    def submit(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool = True
    ) -> None:
        raise NotImplementedError

    async def stop(self, grace: float = 10.0) -> None:
        """No new listener call; wait up to ``grace`` seconds for running ones; stop the workers."""
        await self.tasks.close(grace)
        # Every call we waited for is done; a call still running past ``grace`` finishes on its
        # thread (its outcome is dropped) and the thread then exits.
        self.runner.shutdown(wait=False)

    # -- sending back ---------------------------------------------------------------------------
    async def send_back(self, msg: MessageExt, delay_level: int, broker_name: str, max_times: int) -> bool:
        """CONSUMER_SEND_MSG_BACK, else a direct send to the retry topic; False if both failed."""
        c = self.parts
        inst = c.instance
        try:
            addr = await inst.master_addr_of(msg.topic, broker_name)
            header = ConsumerSendMsgBackRequestHeader(
                offset=msg.commitlog_offset,
                group=c.group,
                delay_level=delay_level,
                origin_msg_id=msg.msg_id,
                origin_topic=msg.topic,
                unit_mode=False,
                max_reconsume_times=max_times,
            )
            resp = await inst.invoke(
                addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext())
            )
            check_response(resp, addr)
            return True
        except MQError as e:
            log.warning("group %s: send-back of %s failed (%s); sending it to %s directly",
                        c.group, msg.msg_id, e, retry_topic(c.group))
        try:
            if delay_level >= 0:
                await self.send_to_retry_topic(
                    msg, msg.reconsume_times + 1, max_times, 3 + msg.reconsume_times
                )
            else:  # straight to the DLQ: the broker sends a retry message there once reconsumeTimes >= max
                times = msg.reconsume_times
                await self.send_to_retry_topic(msg, times, min(max_times, times), 3 + times)
            return True
        except MQError as e:
            log.warning("group %s: sending %s to the retry topic failed too: %s", c.group, msg.msg_id, e)
            return False

    async def send_to_retry_topic(
        self, msg: MessageExt, reconsume_times: int, max_times: int, delay_level: int
    ) -> None:
        """Send a copy of ``msg`` to ``%RETRY%<group>`` as Java's fallback does (through the delay levels)."""
        c = self.parts
        inst = c.instance
        topic = retry_topic(c.group)
        props = dict(msg.properties)
        for k in (Prop.MIN_OFFSET, Prop.MAX_OFFSET, Prop.CONSUME_START_TIME):
            props.pop(k, None)
        props.setdefault(Prop.ORIGIN_MESSAGE_ID, msg.msg_id)
        props[Prop.RETRY_TOPIC] = msg.topic
        props[Prop.RECONSUME_TIME] = str(reconsume_times)
        props[Prop.MAX_RECONSUME_TIMES] = str(max_times)
        props[Prop.DELAY] = str(max(1, min(18, delay_level)))
        props.pop("TRAN_MSG", None)
        info = await inst.find_publish_info(topic)
        if not info.ok:
            raise MQError(f"no route to {topic}")
        mq = info.select_queue()
        payload = Payload(topic, bytes(msg.body), 0, encode_properties(props).decode(), msg.flag, False,
                          props.get(Prop.UNIQ_KEY, ""), reconsume_times, max_times)
        addr = await inst.master_addr_of(topic, mq.broker_name)
        fields = build_send_header(
            payload, group=INNER_PRODUCER_GROUP, queue=mq, born_timestamp=int(time.time() * 1000)
        )
        resp = await inst.invoke(
            addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, fields, payload.body)
        )
        send_result_from_response(resp, payload, mq.broker_name, addr)


class ConcurrentConsumeService(ConsumeServiceBase):
    """Concurrent consumption (see the module docstring)."""

    orderly = False

    def max_reconsume_times(self) -> int:
        m = self.parts.settings.consume.max_reconsume_times
        return 16 if m < 0 else m

    def submit(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool = True
    ) -> None:
        size = max(1, self.parts.settings.consume.batch_size)
        for i in range(0, len(msgs), size):
            self.tasks.spawn(self._consume(msgs[i : i + size], pq, mq))

    async def _consume(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        c = self.parts
        async with self.runner.slots:
            if pq.dropped or self.stopped:
                return
            ctx = ConsumeContext(mq)
            pq.mark_consume_start(msgs)
            started = time.monotonic()
            status = await self._run(msgs, ctx, ConsumeResult.RECONSUME_LATER)
            c.stats.record_consume(
                mq.topic, time.monotonic() - started, len(msgs), status is ConsumeResult.SUCCESS
            )
        if pq.dropped:
            log.info(
                "group %s: %s was dropped while consuming; not committing %d message(s)",
                c.group,
                mq,
                len(msgs),
            )
            return
        done = list(msgs)
        if status is not ConsumeResult.SUCCESS:
            if c.settings.message_model == BROADCASTING:
                for m in msgs:
                    log.warning("group %s (broadcasting): dropping failed message %s", c.group, m.msg_id)
            else:
                failed: list[MessageExt] = []
                for m in msgs:
                    if not await self.send_back(
                        m, ctx.delay_level_when_next_consume, mq.broker_name, self.max_reconsume_times()
                    ):
                        m.reconsume_times += 1
                        failed.append(m)
                if failed:
                    done = [m for m in msgs if m not in failed]
                    self.tasks.later(c.settings.consume.resubmit_delay, self.submit, failed, pq, mq)
        offset = pq.remove_messages(done)
        if offset >= 0 and not pq.dropped:
            c.offset_store.update(mq, offset, increase_only=True)

    async def clean_expired(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        """Send back and remove messages whose listener call outlived the consume timeout."""
        c = self.parts
        if c.settings.message_model == BROADCASTING:
            return
        timeout_ms = int(c.settings.consume.timeout_minutes * 60_000)
        for msg in pq.expired_messages(timeout_ms):
            log.warning("group %s: message %s of %s consumed for over %.1f min; sending it back",
                        c.group, msg.msg_id, mq, c.settings.consume.timeout_minutes)
            if await self.send_back(msg, 3, mq.broker_name, self.max_reconsume_times()):
                offset = pq.remove_messages([msg])
                if offset >= 0 and not pq.dropped:
                    c.offset_store.update(mq, offset, increase_only=True)


class OrderlyConsumeService(ConsumeServiceBase):
    """Orderly consumption (see the module docstring)."""

    orderly = True

    def __init__(
        self,
        parts: ConsumerParts,
        listener: Listener,
        *,
        lock_queue: Callable[[MessageQueue], Awaitable[bool]],
        on_batch_done: Callable[[MessageQueue, ProcessQueue], None],
    ) -> None:
        super().__init__(parts, listener)
        self.lock_queue = lock_queue
        self.on_batch_done = on_batch_done
        self._queue_locks: dict[MessageQueue, asyncio.Lock] = {}

    def max_reconsume_times(self) -> int:
        m = self.parts.settings.consume.max_reconsume_times
        return 2**31 - 1 if m < 0 else m

    def submit(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool = True
    ) -> None:
        if dispatch:
            self.tasks.spawn(self._consume(pq, mq))

    def submit_later(self, pq: ProcessQueue, mq: MessageQueue, delay: float) -> None:
        self.tasks.later(delay, lambda: self.tasks.spawn(self._consume(pq, mq)))

    def _try_lock_later(self, pq: ProcessQueue, mq: MessageQueue, delay: float) -> None:
        async def attempt() -> None:
            ok = await self.lock_queue(mq)
            self.submit_later(pq, mq, 0.01 if ok else 3.0)

        self.tasks.later(delay, lambda: self.tasks.spawn(attempt()))

    async def _consume(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        c = self.parts
        if pq.dropped or self.stopped:
            return
        clustering = c.settings.message_model != BROADCASTING
        expiry_ms = int(c.settings.rebalance.lock_expiry * 1000)
        lock = self._queue_locks.setdefault(mq, asyncio.Lock())
        async with lock:
            if clustering and (not pq.locked or pq.lock_expired(expiry_ms)):
                if not pq.dropped:
                    self._try_lock_later(pq, mq, 0.1)
                return
            begin = time.monotonic()
            while True:
                if pq.dropped or self.stopped:
                    return
                if clustering and (not pq.locked or pq.lock_expired(expiry_ms)):
                    self._try_lock_later(pq, mq, 0.01)
                    return
                if time.monotonic() - begin > MAX_TIME_CONSUME_CONTINUOUSLY:
                    self.submit_later(pq, mq, 0.01)
                    return
                msgs = pq.take_messages(max(1, c.settings.consume.batch_size))
                if not msgs:
                    return
                ctx = ConsumeContext(mq)
                pq.consume_locked = True
                started = time.monotonic()
                try:
                    status = await self._run(msgs, ctx, ConsumeResult.SUSPEND_CURRENT_QUEUE_A_MOMENT)
                finally:
                    pq.consume_locked = False
                ok = status is ConsumeResult.SUCCESS
                c.stats.record_consume(mq.topic, time.monotonic() - started, len(msgs), ok)
                if not ok and await self._must_suspend(msgs, mq):
                    pq.make_messages_to_consume_again(msgs)
                    suspend = ctx.suspend_ms if ctx.suspend_ms >= 0 else c.settings.consume.suspend_ms
                    self.submit_later(pq, mq, suspend / 1000.0)
                    self.on_batch_done(mq, pq)
                    return
                offset = pq.commit()
                if offset >= 0:
                    c.offset_store.update(mq, offset)
                self.on_batch_done(mq, pq)

    async def _must_suspend(self, msgs: list[MessageExt], mq: MessageQueue) -> bool:
        """Java ``checkReconsumeTimes``: messages at the max go to the DLQ; the rest count one more try."""
        suspend = False
        max_times = self.max_reconsume_times()
        for msg in msgs:
            if msg.reconsume_times >= max_times:
                msg.properties[Prop.RECONSUME_TIME] = str(msg.reconsume_times)
                if not await self.send_back(msg, -1, mq.broker_name, max_times):
                    suspend = True
                    msg.reconsume_times += 1
            else:
                suspend = True
                msg.reconsume_times += 1
        return suspend
