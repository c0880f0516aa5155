"""The push consumer's fetcher (Java ``PullMessageService`` + the pull half of
``DefaultMQPushConsumerImpl``): one loop over reusable pull requests.

A :class:`PullRequest` (queue, process queue, next offset) lives as long as its process queue.
:meth:`PullService.run` takes requests from an asyncio queue and sends each as a PULL_MESSAGE; the
answer decides when the same request goes back into the queue:

- flow control (too many or too large cached messages, or too wide an offset span in concurrent
  mode) → again after ``flow.delay``; orderly clustering queue not locked → again after 3 s;
- FOUND → messages to the process queue and the consume service, then again at once
  (``pull.interval``); NO_NEW_MSG / NO_MATCHED_MSG → again at once (and, with nothing cached, the
  memory offset follows ``nextBeginOffset`` so filtered-out entries are not read twice);
- an error → again after ``pull.delay_on_error``;
- PULL_OFFSET_MOVED → the process queue is dropped; after :data:`OFFSET_MOVED_DELAY` the broker's
  ``nextBeginOffset`` is stored and the ``on_offset_moved`` callback (the rebalance service) removes
  the queue, so the next rebalance restarts it there.

The fetcher knows the consumer only through :class:`~.push_parts.ConsumerParts` (it reads the
subscription state before each pull) and two callbacks: ``submit`` (the consume service takes
what was pulled) and ``on_offset_moved``.

Each request is long-polling (sysFlag SUSPEND, ``suspendTimeoutMillis`` = ``pull.suspend_ms``),
carries the memory offset with COMMIT_OFFSET in clustering mode (never to a slave), and goes to the
broker id the previous answer suggested (``suggestWhichBrokerId``). The subscription is not sent:
the broker uses the heartbeat's, which must have reached it first.

Invariants: a dropped process queue's request is never sent again; a request is in at most one
place at a time (the queue, a timer, or a pull in flight).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pyrocketmq.remoting.body import MessageQueue
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import PullMessageRequestHeader
from pyrocketmq.remoting.message import MessageExt

from .errors import BROKER_GONE, MQError
from .process_queue import ProcessQueue, flow_control, now_ms
from .pulling import PullResult, PullStatus, PullSysFlag, Subscription, pull_result_from_response
from .push_parts import ConsumerParts
from .route import MASTER_ID
from .tasks import TaskSet

log = logging.getLogger("pyrocketmq.client")

#: Seconds between a PULL_OFFSET_MOVED and restarting the queue at the broker's offset (Java: 10 s).
OFFSET_MOVED_DELAY = 10.0
#: Seconds before an orderly queue whose broker lock is not held is looked at again.
NOT_LOCKED_DELAY = 3.0

#: Where pulled messages go: ``submit(messages, process_queue, queue, dispatch)``.
Submit = Callable[[list[MessageExt], ProcessQueue, MessageQueue, bool], None]
#: Called after a PULL_OFFSET_MOVED once the new offset is stored: ``(queue, process_queue)``.
OffsetMoved = Callable[[MessageQueue, ProcessQueue], Awaitable[None]]


@dataclass(slots=True)
class PullRequest:
    """One queue's place in the pull service (reused from pull to pull)."""

    mq: MessageQueue
    pq: ProcessQueue
    next_offset: int


class PullService:
    """The pull loop of one push consumer (see the module docstring).

    Example (what the rebalance service does for a newly owned queue)::

        fetcher = PullService(parts, tasks, submit=service.submit, on_offset_moved=rebalancer.offset_moved)
        fetcher.execute(PullRequest(mq, ProcessQueue(), start_offset))
    """

    def __init__(self, parts: ConsumerParts, tasks: TaskSet, *, submit: Submit, on_offset_moved: OffsetMoved) -> None:
        self.parts = parts
        self.tasks = tasks
        self.submit = submit
        self.on_offset_moved = on_offset_moved
        self.queue: asyncio.Queue[PullRequest] | None = None
        self.suggested: dict[MessageQueue, int] = {}
        self.flow_controlled = 0

    def execute(self, req: PullRequest, delay: float = 0.0) -> None:
        """Pull ``req`` again, at once or after ``delay`` seconds."""
        q = self.queue
        if q is None or not self.tasks.open:
            return
        if delay <= 0:
            q.put_nowait(req)
        else:
            self.tasks.later(delay, q.put_nowait, req)

    def start(self) -> None:
        """Create the request queue and start the loop (before the first :meth:`execute`)."""
        self.queue = asyncio.Queue()
        self.tasks.spawn(self.run(self.queue))

    async def run(self, q: asyncio.Queue[PullRequest]) -> None:
        """Take requests and pull them until the task set closes."""
        while self.tasks.open:
            req = await q.get()
            if not req.pq.dropped:
                self.tasks.spawn(self.pull(req))

    async def pull(self, req: PullRequest) -> None:
        c = self.parts
        mq, pq, s = req.mq, req.pq, c.settings
        if pq.dropped:
            return
        pq.last_pull_ms = now_ms()
        reason = flow_control(pq, max_count=s.flow.max_cached_messages, max_mib=s.flow.max_cached_mib,
                              max_span=s.flow.max_offset_span, orderly=c.orderly)
        if reason is not None:
            self.flow_controlled += 1
            if self.flow_controlled % 1000 == 1:
                log.warning("group %s: %s not pulled for a moment (cached %d messages, %d MiB, span %d: %s over "
                            "the limit; flow-controlled %d times)", c.group, mq, pq.msg_count,
                            pq.msg_size // (1024 * 1024), pq.max_span, reason, self.flow_controlled)
            self.execute(req, s.flow.delay)
            return
        if c.orderly and c.clustering and not pq.locked:
            self.execute(req, NOT_LOCKED_DELAY)
            return
        sub = c.state.subscription(mq.topic)
        if sub is None:
            self.execute(req, NOT_LOCKED_DELAY)
            return
        inst = c.instance
        started = time.monotonic()
        try:
            result = await self._request(req, sub)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            if not pq.dropped:
                log.warning("group %s: pull of %s at %d failed: %s", c.group, mq, req.next_offset, e)
            if isinstance(e, BROKER_GONE):
                # the broker is gone or unwell (a failover?): ask the master next time, and look for
                # a new one now rather than at the 30 s route refresh
                self.suggested.pop(mq, None)
                await inst.refresh_after_failure(mq.topic)
            self.execute(req, s.pull.delay_on_error)
            return
        c.stats.record_pull(mq.topic, time.monotonic() - started, len(result.messages))
        if result.suggest_which_broker_id != MASTER_ID or mq in self.suggested:
            self.suggested[mq] = result.suggest_which_broker_id
        if pq.dropped:
            return
        if result.status is PullStatus.FOUND:
            req.next_offset = result.next_begin_offset
            if result.messages:
                dispatch = pq.put_messages(result.messages)
                self.submit(result.messages, pq, mq, dispatch)
                self.execute(req, s.pull.interval)
            else:
                self.execute(req)
        elif result.status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            req.next_offset = result.next_begin_offset
            if pq.msg_count == 0:
                c.offset_store.update(mq, req.next_offset, increase_only=True)
            self.execute(req, s.pull.interval)
        else:
            log.warning("group %s: offset %d of %s is illegal (queue holds %d..%d); restarting it at %d in %.0fs",
                        c.group, req.next_offset, mq, result.min_offset, result.max_offset,
                        result.next_begin_offset, OFFSET_MOVED_DELAY)
            pq.dropped = True
            offset = result.next_begin_offset
            self.tasks.later(OFFSET_MOVED_DELAY, lambda: self.tasks.spawn(self._offset_moved(mq, pq, offset)))

    async def _request(self, req: PullRequest, sub: Subscription) -> PullResult:
        """One PULL_MESSAGE for ``req`` to the broker the last answer suggested (the master at first)."""
        c = self.parts
        mq, s, inst = req.mq, c.settings, c.instance
        commit_offset = c.offset_store.read_memory(mq) if c.clustering else -1
        addr, broker_id = await inst.broker_addr_of(mq.topic, mq.broker_name, self.suggested.get(mq, MASTER_ID))
        sys_flag = PullSysFlag.SUSPEND
        if commit_offset > 0 and broker_id == MASTER_ID:
            sys_flag |= PullSysFlag.COMMIT_OFFSET
        fields = PullMessageRequestHeader(
            consumer_group=c.group, topic=mq.topic, queue_id=mq.queue_id, queue_offset=req.next_offset,
            max_msg_nums=s.pull.batch_size, sys_flag=sys_flag, commit_offset=max(0, commit_offset),
            suspend_timeout_millis=s.pull.suspend_ms, sub_version=c.state.sub_version,
            expression_type=sub.expression_type,
        ).to_ext()
        resp = await inst.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, fields), s.pull.timeout)
        return pull_result_from_response(resp, sub, c.group, addr)

    async def _offset_moved(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        c = self.parts
        c.offset_store.update(mq, offset)
        with contextlib.suppress(MQError):
            await c.persist_offset(mq, offset, sync=True)
        await self.on_offset_moved(mq, pq)
