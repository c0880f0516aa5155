"""The lite pull consumer: assign queues, poll, commit — plus the raw ``pull`` it is built on.

Two levels:

- :meth:`PullConsumer.pull` — one PULL_MESSAGE (11) to a queue at an offset, answered as a
  :class:`PullResult` (FOUND / NO_NEW_MSG / NO_MATCHED_MSG / OFFSET_ILLEGAL, next offset, the
  queue's min and max offsets, the messages). The request carries ``sysFlag = SUBSCRIPTION |
  LITE_PULL`` (``| SUSPEND`` when the broker may hold it for ``suspend_ms``) and the tag expression,
  so the broker needs no heartbeat subscription.
- :meth:`PullConsumer.assign` / :meth:`~PullConsumer.poll` / :meth:`~PullConsumer.commit` — one
  background task per assigned queue pulls ahead (long polling) into a local buffer (at most
  ``max_buffered_per_queue`` messages per queue); ``poll`` hands out what is buffered.

What every delivered message has been through (as in the Java client's ``processPullResult``):
the broker filters by tag *hash*, so tags are re-checked here by exact string; a message pulled
from ``%RETRY%<group>`` gets its original topic back from ``RETRY_TOPIC``; a compressed body is
inflated (and the COMPRESSED bits cleared from ``sys_flag``); ``MIN_OFFSET`` / ``MAX_OFFSET``
properties hold the queue's bounds at pull time.

Offsets: a queue's *consumed* offset is the next offset after what ``poll`` returned (empty
pulls that skip filtered entries advance it too); ``commit`` stores consumed offsets on the
master (UPDATE_CONSUMER_OFFSET). A queue assigned without ``seek`` starts at the group's committed
offset, else per ``consume_from``. ``seek`` bumps the queue's generation: batches pulled before
it are dropped, never delivered.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyrocketmq.remoting.body import ConsumerData, MessageQueue, SubscriptionData
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import (
    MessageExt,
)
from pyrocketmq.remoting.names import RETRY_GROUP_TOPIC_PREFIX
from pyrocketmq.service import Service

from .errors import (
    BROKER_GONE,
    MQBrokerError,
    MQClientError,
    MQError,
    NoPermissionError,
    SubscriptionGroupNotFoundError,
)
from .instance import ClientInstance
from .message import check_topic
from .pulling import (
    PullResult,
    PullStatus,
    Selector,
    Subscription,
    build_pull_header,
    parse_expression,
    pull_result_from_response,
)
from .route import MASTER_ID
from .settings import ClientSettings, PullConsumerSettings

REFUSALS = (SubscriptionGroupNotFoundError, NoPermissionError)
"""Pull errors that retrying cannot fix: poll() raises them once every queue gets one."""

log = logging.getLogger("pyrocketmq.client")



@dataclass(slots=True)
class _QueueState:
    mq: MessageQueue
    pull_offset: int | None = None
    consumed_offset: int | None = None
    committed_offset: int | None = None
    generation: int = 0
    buffered: int = 0
    paused: bool = False
    task: asyncio.Task[None] | None = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    refused: MQBrokerError | None = None
    """The broker's refusal of this queue's last pull when retrying cannot help (no such group…)."""


@dataclass(slots=True)
class _Batch:
    mq: MessageQueue
    generation: int
    messages: list[MessageExt]
    next_offset: int


def _subscription_data(topic: str, sub: Subscription, version: int) -> SubscriptionData:
    return SubscriptionData.build(topic, sub.expression, version, sub.expression_type)


class PullConsumer:
    """A lite pull consumer for one consumer group (asyncio).

    Example::

        consumer = PullConsumer("my-group", "127.0.0.1:9876")
        await consumer.start()
        queues = await consumer.fetch_queues("TopicTest")
        await consumer.assign(queues)
        await consumer.seek_to_begin(queues)
        while True:
            for msg in await consumer.poll(timeout=5):
                print(msg.queue_offset, msg.tags, msg.body)
            await consumer.commit()

    Low-level use needs no assignment: ``await consumer.pull(mq, offset, 32)``.
    """

    def __init__(
        self,
        group: str,
        namesrv_addr: str = "127.0.0.1:9876",
        settings: PullConsumerSettings | None = None,
        client: ClientSettings | None = None,
    ) -> None:
        if not group:
            raise MQClientError("the consumer group is empty: give a group name")
        self.group = group
        self.settings = settings or PullConsumerSettings()
        if self.settings.consume_from not in ("last", "first", "timestamp"):
            raise MQClientError(f"consume_from={self.settings.consume_from!r}: use 'last', 'first' or 'timestamp'")
        self.client_settings = client or ClientSettings()
        self.client_settings.namesrv_addr = namesrv_addr or self.client_settings.namesrv_addr
        self._instance: ClientInstance | None = None
        self._states: dict[MessageQueue, _QueueState] = {}
        self._ready: collections.deque[_Batch] = collections.deque()
        self._data: asyncio.Event | None = None
        self._suggested: dict[MessageQueue, int] = {}
        self._sub_version = int(time.time() * 1000)
        self._started_ms = 0
        self._committer: Service | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def instance(self) -> ClientInstance:
        if self._instance is None:
            raise MQClientError("the consumer is not started: call 'await consumer.start()' first")
        return self._instance

    async def start(self) -> None:
        """Join the client instance and register the group (idempotent)."""
        if self._instance is not None:
            return
        inst = await ClientInstance.join(self.client_settings, lambda i: i.register_consumer(self.group, self))
        self._instance = inst
        self._data = asyncio.Event()
        self._started_ms = int(time.time() * 1000)
        if self.settings.auto_commit:
            self._committer = Service(f"group {self.group}: auto-commit", self.commit,
                                      lambda: self.settings.auto_commit_interval, logger=log)
            self._committer.start()

    async def shutdown(self) -> None:
        """Stop pulling, commit (with ``auto_commit``), unregister the group, release the instance."""
        inst = self._instance
        if inst is None:
            return
        committer, self._committer = self._committer, None
        if committer is not None:
            await committer.stop()
        await self._stop_tasks(list(self._states.values()))
        if self.settings.auto_commit:
            with contextlib.suppress(MQError):
                await self.commit_sync()
        self._instance = None
        await inst.unregister_consumer(self.group)
        await inst.release()

    async def __aenter__(self) -> PullConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # -- queues ---------------------------------------------------------------------------------
    async def fetch_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of ``topic`` (from its current route)."""
        check_topic(topic)
        return await self.instance.subscribe_queues(topic)

    async def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Make ``queues`` the consumer's assignment; pulling starts at once in the background.

        Queues already assigned keep their position; queues no longer listed are dropped
        (their buffered messages are discarded, their consumed offsets forgotten: commit first).
        """
        inst = self.instance
        wanted = list(dict.fromkeys(queues))
        for mq in wanted:
            check_topic(mq.topic)
        gone = [s for mq, s in self._states.items() if mq not in wanted]
        await self._stop_tasks(gone)
        for s in gone:
            del self._states[s.mq]
        for mq in wanted:
            if mq not in self._states:
                state = self._states[mq] = _QueueState(mq)
                state.task = asyncio.create_task(self._pull_loop(state))
        for topic in {mq.topic for mq in wanted}:
            if topic not in inst.routes:
                await inst.update_route(topic)
        await inst.send_heartbeat_to_all()

    def assignment(self) -> list[MessageQueue]:
        return list(self._states)

    def _state(self, mq: MessageQueue) -> _QueueState:
        state = self._states.get(mq)
        if state is None:
            raise MQClientError(f"{mq} is not assigned to this consumer: call assign() first")
        return state

    def seek(self, mq: MessageQueue, offset: int) -> None:
        """Continue ``mq`` from ``offset``: the next messages polled from it start there."""
        if offset < 0:
            raise MQClientError(f"offset {offset} is negative")
        state = self._state(mq)
        state.generation += 1
        state.pull_offset = offset
        state.consumed_offset = offset
        state.buffered = 0
        # A pull in flight (perhaps held by the broker for seconds) is for the old position: drop it.
        old = state.task
        if old is not None:
            state.task = asyncio.get_running_loop().create_task(self._pull_loop(state))
            old.cancel()

    async def seek_to_begin(self, queues: MessageQueue | Sequence[MessageQueue] | None = None) -> None:
        """Seek each queue (all assigned by default) to its min offset on the broker."""
        for mq in self._pick(queues):
            self.seek(mq, await self.instance.min_offset(mq))

    async def seek_to_end(self, queues: MessageQueue | Sequence[MessageQueue] | None = None) -> None:
        """Seek each queue (all assigned by default) to its max offset: only new messages follow."""
        for mq in self._pick(queues):
            self.seek(mq, await self.instance.max_offset(mq))

    async def seek_to_timestamp(self, timestamp_ms: int, queues: MessageQueue | Sequence[MessageQueue] | None = None) -> None:
        """Seek each queue to the first message stored at or after ``timestamp_ms``, roughly."""
        for mq in self._pick(queues):
            self.seek(mq, await self.instance.search_offset(mq, timestamp_ms))

    def _pick(self, queues: MessageQueue | Sequence[MessageQueue] | None) -> list[MessageQueue]:
        if queues is None:
            return list(self._states)
        if isinstance(queues, MessageQueue):
            return [queues]
        return list(queues)

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling these queues (what is buffered is still delivered)."""
        for mq in queues:
            self._state(mq).paused = True

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        for mq in queues:
            state = self._state(mq)
            state.paused = False
            state.wake.set()

    def position(self, mq: MessageQueue) -> int | None:
        """The consumed offset of ``mq``: the offset of the next message ``poll`` will return."""
        return self._state(mq).consumed_offset

    # -- polling --------------------------------------------------------------------------------
    async def poll(self, timeout: float = 5.0, max_messages: int = 1024) -> list[MessageExt]:
        """Messages pulled from the assigned queues; waits up to ``timeout`` seconds for some.

        Returns ``[]`` when nothing arrived in time. Messages of one queue come in offset order.
        Raises the broker's refusal (:class:`~.errors.SubscriptionGroupNotFoundError`,
        :class:`~.errors.NoPermissionError`) when every assigned queue's pulls are refused: waiting
        cannot help until someone creates the group or grants the permission.
        """
        self.instance  # noqa: B018 — raise if not started
        if not self._states:
            raise MQClientError("no queue is assigned: call assign(await fetch_queues(topic)) first")
        assert self._data is not None
        deadline = time.monotonic() + timeout
        out: list[MessageExt] = []
        while True:
            self._drain(out, max_messages)
            if out:
                return out
            refusals = [st.refused for st in self._states.values()]
            if refusals and all(r is not None for r in refusals):
                raise refusals[0]  # type: ignore[misc]  # all() above: none is None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return out
            self._data.clear()
            if self._ready:
                continue
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._data.wait(), remaining)

    def _drain(self, out: list[MessageExt], limit: int) -> None:
        while self._ready:
            batch = self._ready[0]
            if out and len(out) + len(batch.messages) > limit:
                return
            self._ready.popleft()
            state = self._states.get(batch.mq)
            if state is None or state.generation != batch.generation:
                continue
            state.buffered -= len(batch.messages)
            state.consumed_offset = batch.next_offset
            out.extend(batch.messages)
            state.wake.set()

    async def _stop_tasks(self, states: list[_QueueState]) -> None:
        tasks = [s.task for s in states if s.task is not None]
        for s in states:
            s.task = None
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t

    async def _initial_offset(self, mq: MessageQueue) -> int:
        inst = self.instance
        committed = await inst.query_consumer_offset(self.group, mq)
        if committed >= 0:
            return committed
        if self.settings.consume_from == "first" or mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return await inst.min_offset(mq)
        if self.settings.consume_from == "timestamp":
            return await inst.search_offset(mq, self.settings.consume_timestamp_ms)
        return await inst.max_offset(mq)

    def expression_for(self, topic: str) -> Selector:
        return self.settings.topic_expressions.get(topic, self.settings.expression)

    async def _pull_loop(self, state: _QueueState) -> None:
        mq = state.mq
        s = self.settings
        me = asyncio.current_task()
        # A task replaced by seek() or stopped must end even if its cancellation was lost (before
        # Python 3.12, asyncio.wait_for can swallow a cancel that races with the answer).
        while state.task is me:
            if state.paused or state.buffered >= s.max_buffered_per_queue:
                state.wake.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(state.wake.wait(), 1.0)
                continue
            gen = state.generation
            try:
                if state.pull_offset is None:
                    offset = await self._initial_offset(mq)
                    if gen != state.generation:
                        continue
                    state.pull_offset = offset
                    if state.consumed_offset is None:
                        state.consumed_offset = offset
                offset = state.pull_offset
                result = await self.pull(mq, offset, s.pull_batch_size, self.expression_for(mq.topic), s.long_poll_ms)
            except asyncio.CancelledError:
                raise
            except MQError as e:
                state.refused = e if isinstance(e, REFUSALS) else None
                if state.refused is not None and self._data is not None:
                    self._data.set()  # poll() reports it
                log.warning("pull of %s failed: %s; retrying in %.1fs", mq, e, s.pull_delay_on_error)
                if isinstance(e, BROKER_GONE):  # a failover? find the new master now, not at the 30 s refresh
                    self._suggested.pop(mq, None)
                    await self.instance.refresh_after_failure(mq.topic)
                await asyncio.sleep(s.pull_delay_on_error)
                continue
            except Exception:
                log.exception("pull of %s failed unexpectedly", mq)
                await asyncio.sleep(s.pull_delay_on_error)
                continue
            state.refused = None
            if gen != state.generation or state.task is not me:
                continue
            if result.status is PullStatus.OFFSET_ILLEGAL:
                log.warning("offset %d of %s is illegal (queue holds %d..%d); moving to %d",
                            offset, mq, result.min_offset, result.max_offset, result.next_begin_offset)
            state.pull_offset = result.next_begin_offset
            if result.messages or result.next_begin_offset != offset:
                state.buffered += len(result.messages)
                self._ready.append(_Batch(mq, gen, result.messages, result.next_begin_offset))
                if self._data is not None:
                    self._data.set()
            elif s.long_poll_ms <= 0:
                await asyncio.sleep(0.2)  # nothing new and no long polling: do not spin

    # -- the raw pull ---------------------------------------------------------------------------
    async def pull(
        self,
        mq: MessageQueue,
        offset: int,
        max_nums: int = 32,
        expression: Selector = "*",
        suspend_ms: int = 0,
        timeout: float | None = None,
    ) -> PullResult:
        """Pull up to ``max_nums`` messages of ``mq`` from ``offset``.

        ``suspend_ms`` > 0 lets the broker hold the request that long when nothing is there
        (long polling). ``timeout`` defaults to ``suspend_ms`` plus ``pull_timeout``.

        Example::

            result = await consumer.pull(mq, 0, 32)
            for msg in result.messages: ...
            next_offset = result.next_begin_offset
        """
        inst = self.instance
        if offset < 0:
            raise MQClientError(f"offset {offset} is negative")
        sub = parse_expression(expression)
        addr, _ = await inst.broker_addr_of(mq.topic, mq.broker_name, self._suggested.get(mq, MASTER_ID))
        fields = build_pull_header(
            group=self.group, mq=mq, offset=offset, max_nums=max_nums, subscription=sub,
            suspend_ms=suspend_ms, sub_version=self._sub_version,
        )
        if timeout is None:
            timeout = suspend_ms / 1000.0 + self.settings.pull_timeout
        resp = await inst.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, fields), timeout)
        result = pull_result_from_response(resp, sub, self.group, addr)
        if result.suggest_which_broker_id != MASTER_ID or mq in self._suggested:
            self._suggested[mq] = result.suggest_which_broker_id
        return result

    # -- offsets --------------------------------------------------------------------------------
    def _to_commit(self, offsets: dict[MessageQueue, int] | None) -> dict[MessageQueue, int]:
        if offsets is not None:
            return dict(offsets)
        return {
            mq: s.consumed_offset
            for mq, s in self._states.items()
            if s.consumed_offset is not None and s.consumed_offset != s.committed_offset
        }

    async def commit(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        """Store the consumed offsets (or ``offsets``) on the brokers without waiting (oneway)."""
        inst = self.instance
        for mq, off in self._to_commit(offsets).items():
            try:
                await inst.update_consumer_offset(self.group, mq, off, oneway=True)
            except MQError as e:
                log.warning("commit of %s at %d failed: %s", mq, off, e)
                continue
            if mq in self._states:
                self._states[mq].committed_offset = off

    async def commit_sync(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        """Store the consumed offsets (or ``offsets``) and wait for every broker to confirm.

        One queue after another, as the Java client persists them: an Apache RocketMQ 4.9 broker
        creates a group's per-topic offset table without a lock, so the first commits of one
        topic arriving at once can overwrite each other there (one queue's offset is lost).
        """
        inst = self.instance
        todo = self._to_commit(offsets)
        errors = []
        for mq, off in todo.items():
            try:
                await inst.update_consumer_offset(self.group, mq, off)
            except MQError as e:
                errors.append((mq, e))
                continue
            if mq in self._states:
                self._states[mq].committed_offset = off
        if errors:
            mq, err = errors[0]
            if isinstance(err, MQError):
                err.add_note(f"committing {len(errors)} of {len(todo)} queue offset(s) failed, first {mq}")
            raise err

    async def committed(self, mq: MessageQueue) -> int:
        """The group's committed offset of ``mq`` on the broker; -1 when none is stored."""
        return await self.instance.query_consumer_offset(self.group, mq)

    async def min_offset(self, mq: MessageQueue) -> int:
        return await self.instance.min_offset(mq)

    async def max_offset(self, mq: MessageQueue) -> int:
        return await self.instance.max_offset(mq)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the message stored closest to ``timestamp_ms`` (the broker's answer, as in 4.x)."""
        return await self.instance.search_offset(mq, timestamp_ms)

    async def queue_offsets(self, topic: str) -> dict[MessageQueue, tuple[int, int]]:
        """``{queue: (min, max)}`` of every queue of ``topic``, one request per broker."""
        return await self.instance.queue_offsets(topic)

    # -- hooks for the client instance ----------------------------------------------------------
    def topics(self) -> set[str]:
        return {mq.topic for mq in self._states}

    def consumer_data(self) -> ConsumerData:
        subs = tuple(
            _subscription_data(t, parse_expression(self.expression_for(t)), self._sub_version)
            for t in sorted(self.topics())
        )
        from_where = {"last": "CONSUME_FROM_LAST_OFFSET", "first": "CONSUME_FROM_FIRST_OFFSET",
                      "timestamp": "CONSUME_FROM_TIMESTAMP"}[self.settings.consume_from]
        return ConsumerData(
            group_name=self.group,
            consume_type="CONSUME_ACTIVELY",
            message_model="CLUSTERING",
            consume_from_where=from_where,
            subscription_data_set=subs,
            unit_mode=False,
        )

    def running_info(self) -> dict[str, Any]:
        """A minimal ConsumerRunningInfo for GET_CONSUMER_RUNNING_INFO."""
        return {
            "properties": {
                "PROP_CONSUME_TYPE": "CONSUME_ACTIVELY",
                "PROP_CONSUMER_START_TIMESTAMP": str(self._started_ms),
                "PROP_NAMESERVER_ADDR": self.client_settings.namesrv_addr,
                "PROP_CLIENT_LANGUAGE": "PYTHON",
            },
            "subscriptionSet": [
                _subscription_data(t, parse_expression(self.expression_for(t)), self._sub_version).to_dict()
                for t in sorted(self.topics())
            ],
            "mqTable": {},
            "statusTable": {},
        }

    def on_reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """The broker asked the group to restart from ``offsets`` (admin resetOffsetByTime)."""
        for mq, off in offsets.items():
            if mq in self._states:
                self.seek(mq, off)
                self._states[mq].committed_offset = None
