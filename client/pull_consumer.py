"""The lite pull consumer: assign queues, poll, commit — plus the raw ``pull`` it is built on.

Two levels:

- :meth:`PullConsumer.pull` — one PULL_MESSAGE (11) to a queue at an offset, answered as a
  :class:`PullResult` (FOUND / NO_NEW_MSG / NO_MATCHED_MSG / OFFSET_ILLEGAL, next offset, the
  queue's min and max offsets, the messages). The request carries ``sysFlag = SUBSCRIPTION |
  LITE_PULL`` (``| SUSPEND`` when the broker may hold it for ``suspend_ms``) and the tag expression,
  so the broker needs no heartbeat subscription.
- :meth:`PullConsumer.assign` / :meth:`~PullConsumer.poll` / :meth:`~PullConsumer.commit` — built
  on the push consumer's parts: the assignment and pauses live in a
  :class:`~.subscription_state.SubscriptionState` (one process queue per assigned queue), and the
  same fetcher (:class:`~.pull_service.PullService`) pulls every queue ahead (long polling, retries,
  failover recovery) into its process queue, at most ``max_buffered_per_queue`` messages ahead;
  each pulled batch also joins a local buffer that ``poll`` hands out in order.

What every delivered message has been through (as in the Java client's ``processPullResult``):
the broker filters by tag *hash*, so tags are re-checked here by exact string; a message pulled
from ``%RETRY%<group>`` gets its original topic back from ``RETRY_TOPIC``; a compressed body is
inflated (and the COMPRESSED bits cleared from ``sys_flag``); ``MIN_OFFSET`` / ``MAX_OFFSET``
properties hold the queue's bounds at pull time.

Offsets: a queue's *position* (kept in an in-memory :class:`~.offset_store.OffsetStore`) is the
next offset after what ``poll`` returned; pulls that skip filtered entries while nothing of the
queue is buffered advance it too. ``commit`` stores positions on the master
(UPDATE_CONSUMER_OFFSET). A queue assigned without ``seek`` starts at the group's committed
offset, else per ``consume_from``. ``seek`` gives the queue a new process queue: batches pulled for
the old one (even by a pull still in flight) are dropped, never delivered.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pyrocketmq.remoting.body import ConsumerData, MessageQueue, SubscriptionData
from pyrocketmq.remoting.message import MessageExt
from pyrocketmq.remoting.names import RETRY_GROUP_TOPIC_PREFIX
from pyrocketmq.service import Service

from .consumer_base import Consumer
from .consumer_stats import ConsumerStats
from .errors import MQClientError, MQError, NoPermissionError, SubscriptionGroupNotFoundError
from .message import check_topic
from .offset_store import OffsetStore
from .process_queue import ProcessQueue, now_ms
from .pull_service import PAUSED_DELAY, FetchPlan, PullRequest, PullService
from .pulling import PullResult, Selector, Subscription, parse_expression
from .rebalance import CLUSTERING
from .settings import FlowControlSettings, PullConsumerSettings, PullSettings
from .subscription_state import SubscriptionState
from .tasks import TaskSet

REFUSALS = (SubscriptionGroupNotFoundError, NoPermissionError)
"""Pull errors that retrying cannot fix: poll() raises them once every queue gets one."""
#: The lite consumer bounds only the count of buffered messages, not their size or offset span.
NO_LIMIT = sys.maxsize

log = logging.getLogger("pyrocketmq.client")


@dataclass(slots=True)
class _Batch:
    """Messages of one pull, in the buffer ``poll`` hands out; ``next_offset`` is the queue's
    position once they are polled."""

    mq: MessageQueue
    pq: ProcessQueue
    messages: list[MessageExt]
    next_offset: int


def _subscription_data(topic: str, sub: Subscription, version: int) -> SubscriptionData:
    return SubscriptionData.build(topic, sub.expression, version, sub.expression_type)


def fetch_plan(s: PullConsumerSettings) -> FetchPlan:
    """How the fetcher pulls for a lite consumer with settings ``s``."""
    pull = PullSettings(
        batch_size=s.pull_batch_size,
        suspend_ms=s.long_poll_ms,
        timeout=s.long_poll_ms / 1000.0 + s.pull_timeout,
        delay_on_error=s.pull_delay_on_error,
    )
    flow = FlowControlSettings(max_cached_messages=s.max_buffered_per_queue, max_cached_mib=NO_LIMIT,
                               max_offset_span=NO_LIMIT, delay=PAUSED_DELAY)
    return FetchPlan(pull, flow, lite=True)


class PullConsumer(Consumer[PullConsumerSettings]):
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

    def _default_settings(self) -> PullConsumerSettings:
        return PullConsumerSettings()

    def _setup(self) -> None:
        self.state = SubscriptionState(self.group, CLUSTERING, read_retry=False)
        self.offset_store = OffsetStore(self.group)
        """Positions: the offset of the next message ``poll`` returns, per assigned queue."""
        self.stats = ConsumerStats(group=self.group)
        self._committed: dict[MessageQueue, int] = {}
        self._ready: collections.deque[_Batch] = collections.deque()
        self._data: asyncio.Event | None = None
        self._tasks = TaskSet()
        self._fetcher: PullService | None = None
        self._started_ms = 0
        self._committer: Service | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Join the client instance and register the group (idempotent)."""
        if self._instance is not None:
            return
        self._instance = await self._join()
        self._data = asyncio.Event()
        self._started_ms = now_ms()
        self._tasks = TaskSet()
        self._fetcher = PullService(self, fetch_plan(self.settings), self._tasks, submit=self._buffer,
                                    start_offset=self._start_offset, on_failure=self._pull_failed)
        self._fetcher.start()
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
        await self._tasks.close()
        if self.settings.auto_commit:
            with contextlib.suppress(MQError):
                await self.commit_sync()
        await self._leave(inst)
        self._fetcher = None

    # -- queues ---------------------------------------------------------------------------------
    async def fetch_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of ``topic`` (from its current route)."""
        check_topic(topic)
        return await self.instance.subscribe_queues(topic)

    async def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Make ``queues`` the consumer's assignment; pulling starts at once in the background.

        Queues already assigned keep their position; queues no longer listed are dropped
        (their buffered messages are discarded, their positions forgotten: commit first).
        """
        inst, state = self.instance, self.state
        wanted = list(dict.fromkeys(queues))
        for mq in wanted:
            check_topic(mq.topic)
        for mq in [m for m in state.table if m not in wanted]:
            state.unassign(mq)
            state.resume(mq)
            self.offset_store.remove(mq)
            self._committed.pop(mq, None)
        topics = {mq.topic for mq in wanted}
        for topic in set(state.subscriptions()) - topics:
            state.unsubscribe(topic)
        for topic in topics:
            state.subscribe(topic, parse_expression(self.expression_for(topic)))
        for mq in wanted:
            if mq not in state.table:
                self._restart(mq, -1)
        for topic in topics:
            if topic not in inst.routes:
                await inst.update_route(topic)
        await inst.send_heartbeat_to_all()

    def assignment(self) -> list[MessageQueue]:
        return list(self.state.table)

    def _restart(self, mq: MessageQueue, offset: int) -> None:
        """Give ``mq`` a new process queue (the old one, if any, is dropped) and pull it from
        ``offset`` (-1: where :meth:`_start_offset` says)."""
        self.state.unassign(mq)
        pq = ProcessQueue()
        self.state.assign(mq, pq)
        if self._fetcher is not None:
            self._fetcher.execute(PullRequest(mq, pq, offset))

    def _assigned(self, mq: MessageQueue) -> MessageQueue:
        if mq not in self.state.table:
            raise MQClientError(f"{mq} is not assigned to this consumer: call assign() first")
        return mq

    def seek(self, mq: MessageQueue, offset: int) -> None:
        """Continue ``mq`` from ``offset``: the next messages polled from it start there."""
        if offset < 0:
            raise MQClientError(f"offset {offset} is negative")
        self.offset_store.update(self._assigned(mq), offset)
        self._restart(mq, offset)

    async def seek_to_begin(self, queues: MessageQueue | Sequence[MessageQueue] | None = None) -> None:
        """Seek each queue (all assigned by default) to its min offset on the broker."""
        for mq in self._pick(queues):
            self.seek(mq, await self.instance.min_offset(mq))

    async def seek_to_end(self, queues: MessageQueue | Sequence[MessageQueue] | None = None) -> None:
        """Seek each queue (all assigned by default) to its max offset: only new messages follow."""
        for mq in self._pick(queues):
            self.seek(mq, await self.instance.max_offset(mq))

    async def seek_to_timestamp(
        self, timestamp_ms: int, queues: MessageQueue | Sequence[MessageQueue] | None = None
    ) -> None:
        """Seek each queue to the first message stored at or after ``timestamp_ms``, roughly."""
        for mq in self._pick(queues):
            self.seek(mq, await self.instance.search_offset(mq, timestamp_ms))

    def _pick(self, queues: MessageQueue | Sequence[MessageQueue] | None) -> list[MessageQueue]:
        if queues is None:
            return list(self.state.table)
        if isinstance(queues, MessageQueue):
            return [queues]
        return list(queues)

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling these queues (what is buffered is still delivered)."""
        for mq in queues:
            self.state.pause(self._assigned(mq))

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        for mq in queues:
            self.state.resume(self._assigned(mq))
            if self._fetcher is not None:
                self._fetcher.wake(mq)

    def position(self, mq: MessageQueue) -> int | None:
        """The position of ``mq``: the offset of the next message ``poll`` will return."""
        offset = self.offset_store.read_memory(self._assigned(mq))
        return offset if offset >= 0 else None

    # -- polling --------------------------------------------------------------------------------
    async def poll(self, timeout: float = 5.0, max_messages: int = 1024) -> list[MessageExt]:
        """Messages pulled from the assigned queues; waits up to ``timeout`` seconds for some.

        Returns ``[]`` when nothing arrived in time. Messages of one queue come in offset order.
        Raises the broker's refusal (:class:`~.errors.SubscriptionGroupNotFoundError`,
        :class:`~.errors.NoPermissionError`) when every assigned queue's pulls are refused: waiting
        cannot help until someone creates the group or grants the permission.
        """
        self.instance  # noqa: B018 — raise if not started
        if not self.state.table:
            raise MQClientError("no queue is assigned: call assign(await fetch_queues(topic)) first")
        assert self._data is not None
        deadline = time.monotonic() + timeout
        out: list[MessageExt] = []
        while True:
            self._drain(out, max_messages)
            if out:
                return out
            self._raise_refusal()
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
            if not self.state.owns(batch.mq, batch.pq):
                continue  # a batch pulled before a seek or for a queue no longer assigned
            batch.pq.remove_messages(batch.messages)
            self.offset_store.update(batch.mq, batch.next_offset)
            out.extend(batch.messages)
            if self._fetcher is not None:
                self._fetcher.wake(batch.mq)  # room in its buffer again

    def _raise_refusal(self) -> None:
        if self._fetcher is None:
            return
        failures = self._fetcher.failures
        refusals = [e for mq in self.state.table if isinstance(e := failures.get(mq), REFUSALS)]
        if refusals and len(refusals) == len(self.state.table):
            raise refusals[0]

    # -- the fetcher's callbacks ----------------------------------------------------------------
    def _buffer(self, req: PullRequest, messages: list[MessageExt], dispatch: bool) -> None:
        self._ready.append(_Batch(req.mq, req.pq, messages, req.next_offset))
        if self._data is not None:
            self._data.set()

    def _pull_failed(self, req: PullRequest, error: Exception) -> None:
        if isinstance(error, REFUSALS) and self._data is not None:
            self._data.set()  # poll() reports it

    async def _start_offset(self, mq: MessageQueue) -> int:
        """Where a queue assigned without ``seek`` starts: the committed offset, else per ``consume_from``."""
        inst = self.instance
        offset = await inst.query_consumer_offset(self.group, mq)
        if offset < 0:
            if self.settings.consume_from == "first" or mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                offset = await inst.min_offset(mq)
            elif self.settings.consume_from == "timestamp":
                offset = await inst.search_offset(mq, self.settings.consume_timestamp_ms)
            else:
                offset = await inst.max_offset(mq)
        if self.offset_store.read_memory(mq) < 0:  # not sought meanwhile
            self.offset_store.update(mq, offset)
        return offset

    def expression_for(self, topic: str) -> Selector:
        return self.settings.topic_expressions.get(topic, self.settings.expression)

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
        """Pull up to ``max_nums`` messages of ``mq`` from ``offset`` (one request of the fetcher's).

        ``suspend_ms`` > 0 lets the broker hold the request that long when nothing is there
        (long polling). ``timeout`` defaults to ``suspend_ms`` plus ``pull_timeout``.

        Example::

            result = await consumer.pull(mq, 0, 32)
            for msg in result.messages: ...
            next_offset = result.next_begin_offset
        """
        self.instance  # noqa: B018 — raise if not started
        fetcher = self._fetcher
        assert fetcher is not None  # made by start() with the instance
        if offset < 0:
            raise MQClientError(f"offset {offset} is negative")
        if timeout is None:
            timeout = suspend_ms / 1000.0 + self.settings.pull_timeout
        return await fetcher.request(mq, offset, parse_expression(expression), max_nums=max_nums,
                                     suspend_ms=suspend_ms, timeout=timeout)

    # -- offsets --------------------------------------------------------------------------------
    async def persist_offset(self, mq: MessageQueue, offset: int, *, sync: bool) -> None:
        """Store ``offset`` of ``mq`` on the master (oneway unless ``sync``)."""
        await self.instance.update_consumer_offset(self.group, mq, offset, oneway=not sync)
        if mq in self.state.table:
            self._committed[mq] = offset

    def _to_commit(self, offsets: dict[MessageQueue, int] | None) -> dict[MessageQueue, int]:
        if offsets is not None:
            return dict(offsets)
        return {mq: off for mq in self.state.table
                if (off := self.offset_store.read_memory(mq)) >= 0 and off != self._committed.get(mq)}

    async def commit(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        """Store the positions (or ``offsets``) on the brokers without waiting (oneway)."""
        self.instance  # noqa: B018 — raise if not started
        for mq, off in self._to_commit(offsets).items():
            try:
                await self.persist_offset(mq, off, sync=False)
            except MQError as e:
                log.warning("commit of %s at %d failed: %s", mq, off, e)

    async def commit_sync(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        """Store the positions (or ``offsets``) and wait for every broker to confirm.

        One queue after another, as the Java client persists them: an Apache RocketMQ 4.9 broker
        creates a group's per-topic offset table without a lock, so the first commits of one
        topic arriving at once can overwrite each other there (one queue's offset is lost).
        """
        self.instance  # noqa: B018 — raise if not started
        todo = self._to_commit(offsets)
        errors = []
        for mq, off in todo.items():
            try:
                await self.persist_offset(mq, off, sync=True)
            except MQError as e:
                errors.append((mq, e))
        if errors:
            mq, err = errors[0]
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
        return {mq.topic for mq in self.state.table}

    def _subscription_data(self) -> tuple[SubscriptionData, ...]:
        version = self.state.sub_version
        return tuple(
            _subscription_data(t, sub, version) for t, sub in sorted(self.state.subscriptions().items())
        )

    def consumer_data(self) -> ConsumerData:
        from_where = {"last": "CONSUME_FROM_LAST_OFFSET", "first": "CONSUME_FROM_FIRST_OFFSET",
                      "timestamp": "CONSUME_FROM_TIMESTAMP"}[self.settings.consume_from]
        return ConsumerData(
            group_name=self.group,
            consume_type="CONSUME_ACTIVELY",
            message_model="CLUSTERING",
            consume_from_where=from_where,
            subscription_data_set=self._subscription_data(),
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
            "subscriptionSet": [sub.to_dict() for sub in self._subscription_data()],
            "mqTable": {},
            "statusTable": {},
        }

    def on_reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """The broker asked the group to restart from ``offsets`` (admin resetOffsetByTime)."""
        for mq, off in offsets.items():
            if mq in self.state.table:
                self.seek(mq, off)
                self._committed.pop(mq, None)
