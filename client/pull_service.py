"""The fetcher of both consumers (Java ``PullMessageService`` with the pull halves of
``DefaultMQPushConsumerImpl`` and ``DefaultLitePullConsumerImpl``): one loop over reusable pull
requests, the only place a consumer pulls, retries and recovers from a failover.

A :class:`PullRequest` (queue, process queue, next offset) lives as long as its process queue.
:meth:`PullService.execute` runs a task that sends it as a PULL_MESSAGE, at once or after a delay
(Java queues it for its one pull thread; here each pull is a task of the loop); the answer decides
when the same request is executed again:

- a paused queue (:class:`~.subscription_state.SubscriptionState`) → again after
  :data:`PAUSED_DELAY`; flow control (too many or too large cached messages, or too wide an offset
  span in concurrent mode) → again after ``flow.delay``; orderly clustering queue not locked →
  again after 3 s. A queue held back for a pause or flow control goes back at once on
  :meth:`PullService.wake` (the lite consumer's ``resume``, or ``poll`` making room);
- a request whose offset is not known yet (-1: a lite consumer's newly assigned queue) starts
  where the ``start_offset`` callback says;
- FOUND → messages to the process queue and to ``submit`` (the consume service, or the lite
  consumer's buffer), then again after ``pull.interval``; no message (NO_NEW_MSG, NO_MATCHED_MSG,
  or all filtered out here) → again, and, with nothing cached, the memory offset follows
  ``nextBeginOffset`` so filtered-out entries are not read twice; without long polling, an empty
  answer waits :data:`IDLE_DELAY` rather than spin;
- an error → again after ``pull.delay_on_error``; when the broker is gone or unwell (a failover?)
  the next pull asks the master and the topic's route is refreshed at once; ``on_failure`` hears
  of it, and :attr:`PullService.failures` holds it until a pull of the queue succeeds;
- PULL_OFFSET_MOVED → with ``on_offset_moved`` (push consumer) the process queue is dropped; after
  :data:`OFFSET_MOVED_DELAY` the broker's ``nextBeginOffset`` is stored and the callback (the
  rebalance service) removes the queue, so the next rebalance restarts it there. Without it (lite
  consumer) pulling goes on from ``nextBeginOffset`` at once.

The fetcher knows the consumer only through :class:`FetchParts`, its :class:`FetchPlan` and the
callbacks it is built with; it reads the subscription state before each pull.

How a request is sent (:meth:`PullService.request`): to the broker id the previous answer suggested
(``suggestWhichBrokerId``); long-polling (SUSPEND, ``pull.suspend_ms``) unless ``suspend_ms`` is 0.
A push consumer's pull carries the memory offset (COMMIT_OFFSET in clustering mode, never to a
slave) and no subscription: the broker uses the heartbeat's, which must have reached it first. A
lite pull carries its subscription (LITE_PULL) and no offset.

Invariants: a dropped process queue's request is never sent again; a request is in at most one
place at a time (a timer, the held requests, or a pull task).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import MessageExt

from .consumer_stats import ConsumerStats
from .errors import BROKER_GONE, MQError
from .instance import ClientInstance
from .offset_store import OffsetStore
from .process_queue import ProcessQueue, flow_control, now_ms
from .pulling import PullResult, PullStatus, Subscription, build_pull_header, pull_result_from_response
from .route import MASTER_ID
from .settings import FlowControlSettings, PullSettings
from .subscription_state import SubscriptionState
from .tasks import TaskSet

log = logging.getLogger("pyrocketmq.client")

#: Seconds between a PULL_OFFSET_MOVED and restarting the queue at the broker's offset (Java: 10 s).
OFFSET_MOVED_DELAY = 10.0
#: Seconds before an orderly queue whose broker lock is not held is looked at again.
NOT_LOCKED_DELAY = 3.0
#: Seconds before a paused queue is looked at again (unless woken sooner).
PAUSED_DELAY = 1.0
#: Seconds between two empty pulls of a queue when the broker may not hold them (``suspend_ms`` 0).
IDLE_DELAY = 0.2


@dataclass(slots=True)
class PullRequest:
    """One queue's place in the pull service (reused from pull to pull); ``next_offset`` -1: not known yet."""

    mq: MessageQueue
    pq: ProcessQueue
    next_offset: int


#: Where pulled messages go: ``submit(request, messages, dispatch)``; ``request.next_offset`` is
#: already where the next pull starts, ``dispatch`` what :meth:`.ProcessQueue.put_messages` said.
Submit = Callable[[PullRequest, list[MessageExt], bool], None]
#: Called after a PULL_OFFSET_MOVED once the new offset is stored: ``(queue, process_queue)``.
OffsetMoved = Callable[[MessageQueue, ProcessQueue], Awaitable[None]]
#: Where a queue whose request has no offset yet starts.
StartOffset = Callable[[MessageQueue], Awaitable[int]]
#: Told of every failed pull: ``(request, error)``.
Failure = Callable[[PullRequest, Exception], None]


class FetchParts(Protocol):
    """What the fetcher reads of the consumer it pulls for."""

    @property
    def group(self) -> str: ...

    @property
    def instance(self) -> ClientInstance: ...

    @property
    def state(self) -> SubscriptionState: ...

    @property
    def stats(self) -> ConsumerStats: ...

    @property
    def offset_store(self) -> OffsetStore: ...

    async def persist_offset(self, mq: MessageQueue, offset: int, *, sync: bool) -> None: ...


@dataclass(frozen=True, slots=True)
class FetchPlan:
    """How one consumer pulls (fixed at its start)."""

    pull: PullSettings
    """Batch size, long polling, timeout, delays."""
    flow: FlowControlSettings
    """When a queue holds too much to be pulled."""
    lite: bool = False
    """Pulls carry their subscription (LITE_PULL) and never the group's offset: the lite pull consumer."""
    orderly: bool = False
    """Orderly push consumer: no offset-span limit; in clustering mode, no pull without the broker lock."""
    clustering: bool = True
    """Offsets live on the brokers: a push consumer's pulls carry them (COMMIT_OFFSET)."""


class PullService:
    """The pull loop of one consumer (see the module docstring).

    Example (what the rebalance service does for a newly owned queue)::

        fetcher = PullService(parts, plan, tasks, submit=on_pulled, on_offset_moved=rebalancer.offset_moved)
        fetcher.start()
        fetcher.execute(PullRequest(mq, ProcessQueue(), start_offset))
    """

    def __init__(
        self, parts: FetchParts, plan: FetchPlan, tasks: TaskSet, *, submit: Submit,
        on_offset_moved: OffsetMoved | None = None, start_offset: StartOffset | None = None,
        on_failure: Failure | None = None,
    ) -> None:
        self.parts = parts
        self.plan = plan
        self.tasks = tasks
        self.submit = submit
        self.on_offset_moved = on_offset_moved
        self.start_offset = start_offset
        self.on_failure = on_failure
        self.started = False
        self.suggested: dict[MessageQueue, int] = {}
        self.failures: dict[MessageQueue, Exception] = {}
        """The last pull error of each queue, until one of its pulls succeeds."""
        self.held: dict[MessageQueue, PullRequest] = {}
        """Requests held back for a pause or flow control (:meth:`wake` sends them at once)."""
        self.flow_controlled = 0

    def execute(self, req: PullRequest, delay: float = 0.0) -> None:
        """Pull ``req`` (again), at once or after ``delay`` seconds; never once the task set is closed."""
        if not self.started or req.pq.dropped:
            return
        if delay <= 0:
            self.tasks.spawn(self.pull(req))
        else:
            self.tasks.later(delay, self.execute, req)

    def wake(self, mq: MessageQueue) -> None:
        """Pull ``mq`` now if its request is held back for a pause or flow control."""
        req = self.held.pop(mq, None)
        if req is not None:
            self.execute(req)

    def _hold(self, req: PullRequest, delay: float) -> None:
        self.held[req.mq] = req
        self.tasks.later(delay, self._release, req)

    def _release(self, req: PullRequest) -> None:
        if self.held.get(req.mq) is req:
            self.wake(req.mq)

    def start(self) -> None:
        """Let :meth:`execute` pull (requests executed before are dropped)."""
        self.started = True

    def _wait(self, mq: MessageQueue, pq: ProcessQueue) -> tuple[float, bool] | None:
        """How long ``mq`` must wait before it is pulled, and whether :meth:`wake` may end the wait."""
        c, plan, f = self.parts, self.plan, self.plan.flow
        if mq in c.state.paused:
            return PAUSED_DELAY, True
        reason = flow_control(pq, max_count=f.max_cached_messages, max_mib=f.max_cached_mib,
                              max_span=f.max_offset_span, orderly=plan.orderly)
        if reason is not None:
            self.flow_controlled += 1
            if self.flow_controlled % 1000 == 1:
                log.warning(
                    "group %s: %s not pulled for a moment (cached %d messages, %d MiB, span %d: %s over "
                    "the limit; flow-controlled %d times)",
                    c.group,
                    mq,
                    pq.msg_count,
                    pq.msg_size // (1024 * 1024),
                    pq.max_span,
                    reason,
                    self.flow_controlled,
                )
            return f.delay, True
        if plan.orderly and plan.clustering and not pq.locked:
            return NOT_LOCKED_DELAY, False
        return None

    async def pull(self, req: PullRequest) -> None:
        c, s = self.parts, self.plan.pull
        mq, pq = req.mq, req.pq
        if pq.dropped:
            return
        pq.last_pull_ms = now_ms()
        wait = self._wait(mq, pq)
        if wait is not None:
            delay, wakeable = wait
            if wakeable:
                self._hold(req, delay)
            else:
                self.execute(req, delay)
            return
        sub = c.state.subscription(mq.topic)
        if sub is None:
            self.execute(req, NOT_LOCKED_DELAY)
            return
        started = time.monotonic()
        try:
            if req.next_offset < 0 and self.start_offset is not None:
                req.next_offset = await self.start_offset(mq)
            offset = req.next_offset
            result = await self.request(mq, offset, sub, max_nums=s.batch_size, suspend_ms=s.suspend_ms,
                                        timeout=s.timeout)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            await self._failed(req, e)
            return
        self.failures.pop(mq, None)
        c.stats.record_pull(mq.topic, time.monotonic() - started, len(result.messages))
        if not pq.dropped:
            self._pulled(req, offset, result)

    async def _failed(self, req: PullRequest, e: Exception) -> None:
        mq = req.mq
        self.failures[mq] = e
        if not req.pq.dropped:
            log.warning("group %s: pull of %s at %d failed: %s; again in %.1fs", self.parts.group, mq,
                        req.next_offset, e, self.plan.pull.delay_on_error)
        if isinstance(e, BROKER_GONE):
            # the broker is gone or unwell (a failover?): ask the master next time, and look for
            # a new one now rather than at the 30 s route refresh
            self.suggested.pop(mq, None)
            await self.parts.instance.refresh_after_failure(mq.topic)
        if self.on_failure is not None:
            self.on_failure(req, e)
        self.execute(req, self.plan.pull.delay_on_error)

    def _pulled(self, req: PullRequest, offset: int, result: PullResult) -> None:
        c, s = self.parts, self.plan.pull
        mq, pq = req.mq, req.pq
        if result.status is PullStatus.OFFSET_ILLEGAL:
            self._offset_illegal(req, offset, result)
            return
        req.next_offset = result.next_begin_offset
        if result.messages:
            dispatch = pq.put_messages(result.messages)
            self.submit(req, result.messages, dispatch)
            self.execute(req, s.interval)
            return
        if pq.msg_count == 0:
            c.offset_store.update(mq, req.next_offset, increase_only=True)
        idle = s.suspend_ms <= 0 and req.next_offset == offset
        self.execute(req, max(s.interval, IDLE_DELAY) if idle else s.interval)

    def _offset_illegal(self, req: PullRequest, offset: int, result: PullResult) -> None:
        c, mq, pq = self.parts, req.mq, req.pq
        moved = self.on_offset_moved
        log.warning(
            "group %s: offset %d of %s is illegal (queue holds %d..%d); %s at %d",
            c.group,
            offset,
            mq,
            result.min_offset,
            result.max_offset,
            f"restarting it in {OFFSET_MOVED_DELAY:.0f}s" if moved else "going on",
            result.next_begin_offset,
        )
        new = result.next_begin_offset
        if moved is None:
            req.next_offset = new
            if pq.msg_count == 0:
                c.offset_store.update(mq, new)
            self.execute(req)
            return
        pq.dropped = True
        self.tasks.later(OFFSET_MOVED_DELAY, lambda: self.tasks.spawn(self._offset_moved(mq, pq, new, moved)))

    async def request(
        self,
        mq: MessageQueue,
        offset: int,
        sub: Subscription,
        *,
        max_nums: int,
        suspend_ms: int,
        timeout: float,
    ) -> PullResult:
        """One PULL_MESSAGE of ``mq`` from ``offset`` to the broker the last answer suggested (the
        master at first); the answer's suggestion is remembered for the next one."""
        c, plan, inst = self.parts, self.plan, self.parts.instance
        commit_offset = c.offset_store.read_memory(mq) if plan.clustering and not plan.lite else -1
        addr, broker_id = await inst.broker_addr_of(
            mq.topic, mq.broker_name, self.suggested.get(mq, MASTER_ID)
        )
        fields = build_pull_header(
            group=c.group, mq=mq, offset=offset, max_nums=max_nums, subscription=sub, suspend_ms=suspend_ms,
            sub_version=c.state.sub_version, commit_offset=commit_offset,
            commit=commit_offset > 0 and broker_id == MASTER_ID, lite=plan.lite,
        )
        resp = await inst.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, fields), timeout)
        result = pull_result_from_response(resp, sub, c.group, addr)
        if result.suggest_which_broker_id != MASTER_ID or mq in self.suggested:
            self.suggested[mq] = result.suggest_which_broker_id
        return result

    async def _offset_moved(
        self, mq: MessageQueue, pq: ProcessQueue, offset: int, moved: OffsetMoved
    ) -> None:
        c = self.parts
        c.offset_store.update(mq, offset)
        with contextlib.suppress(MQError):
            await c.persist_offset(mq, offset, sync=True)
        await moved(mq, pq)
