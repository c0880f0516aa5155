"""The push consumer's rebalance service (Java ``RebalancePushImpl``): which queues it owns.

It runs at start, every ``rebalance.interval`` seconds (sooner while a subscribed topic has no
route yet) and at once on :meth:`RebalanceService.soon` (NOTIFY_CONSUMER_IDS_CHANGED, a
subscription change, a reset). Each run asks the pure functions of :mod:`.rebalance` what to
own, then does the I/O: LOCK_BATCH_MQ for a new orderly queue, the start offset, a process queue
and a pull request handed to the fetcher; for a queue given up, the offset persisted and, in
orderly clustering mode, the broker lock released once the last listener call on it has ended
(until then the queue is *parked* in the :class:`~.subscription_state.SubscriptionState`).

It also keeps the orderly broker locks fresh (:meth:`lock_all`), restarts a queue whose pull
offset moved (:meth:`offset_moved`) and applies a broker's RESET_CONSUMER_CLIENT_OFFSET
(:meth:`reset_offsets`). Every change of the assignment happens under one lock.

Invariants: a queue is pulled only after it is in the table (and locked, in orderly clustering
mode); a parked queue's lock is released only once its consume lock is free and its offset stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable

from pyrocketmq.remoting.body import ConsumerIdList, MessageQueue
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.names import RETRY_GROUP_TOPIC_PREFIX
from pyrocketmq.service import Service

from .allocate import Strategy
from .errors import MQError
from .process_queue import ProcessQueue, now_ms
from .pull_service import PullRequest
from .push_parts import ConsumerParts
from .queue_locks import by_broker, lock_batch, unlock_batches
from .rebalance import allocate_topic, not_subscribed, plan, rebalance_wait, start_position
from .request_errors import check_response
from .tasks import TaskSet

log = logging.getLogger("pyrocketmq.client")

ROUTE_PATIENCE_MS = 10_000
"""A subscribed topic without a route this long after start is worth a warning."""
#: Seconds between dropping the queues of a reset topic and restarting them at the new offsets.
RESET_DELAY = 1.0
PULL_EXPIRY_MS = 120_000


class RebalanceService:
    """Owns the assignment of one push consumer (see the module docstring).

    Example (what the consumer does at start)::

        rebalancer = RebalanceService(parts, strategy, tasks, fetch=fetcher.execute)
        services.add(rebalancer.loop)      # runs rebalance() now and then
        rebalancer.soon()                  # … and now
    """

    def __init__(self, parts: ConsumerParts, strategy: Strategy, tasks: TaskSet, *,
                 fetch: Callable[[PullRequest], None]) -> None:
        self.parts = parts
        self.tasks = tasks
        self.state = parts.state
        self.strategy = strategy
        self.fetch = fetch
        self.lock = asyncio.Lock()
        self.started_ms = now_ms()
        self._route_warned: set[str] = set()
        interval = parts.settings.rebalance.interval
        self.loop = Service(f"group {parts.group}: rebalance", self.rebalance,
                            lambda: rebalance_wait(self.state.subscriptions(), self.state.routes, interval),
                            first_wait=False, logger=log)

    def soon(self) -> None:
        """Rebalance now (the loop wakes up)."""
        self.loop.wakeup()

    @property
    def _orderly_clustering(self) -> bool:
        return self.parts.orderly and self.parts.clustering

    # -- routes ---------------------------------------------------------------------------------
    async def refresh_routes(self) -> None:
        """Fetch the queues of every subscribed topic (a topic without a route yet is retried later)."""
        inst, state = self.parts.instance, self.state
        for topic in sorted(state.subscriptions()):
            try:
                state.routes[topic] = await inst.subscribe_queues(topic)
            except MQError as e:
                # DEBUG/INFO: a topic a producer has just created is routed within moments;
                # rebalance() warns if it still is not after ROUTE_PATIENCE_MS.
                level = logging.DEBUG if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else logging.INFO
                log.log(level, "group %s: no route for %s yet: %s", self.parts.group, topic, e)

    def _warn_unrouted(self, topic: str, e: MQError) -> None:
        if (topic in self._route_warned or topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
                or now_ms() - self.started_ms < ROUTE_PATIENCE_MS):
            return
        self._route_warned.add(topic)
        log.warning("group %s: topic %s still has no route after %d s: %s", self.parts.group, topic,
                    ROUTE_PATIENCE_MS // 1000, e)

    async def _queues_of(self, topic: str) -> list[MessageQueue] | None:
        queues = self.state.routes.get(topic)
        if queues:
            return queues
        inst = self.parts.instance
        try:
            queues = self.state.routes[topic] = await inst.subscribe_queues(topic)
        except MQError as e:
            self._warn_unrouted(topic, e)
        if (
            queues
        ):  # a route at last: its brokers must know this member before it asks who else is in the group
            with contextlib.suppress(MQError):
                await inst.send_heartbeat_to_all()
        return queues

    # -- rebalance ------------------------------------------------------------------------------
    async def rebalance(self) -> bool:
        """One rebalance of every subscribed topic; True when the process-queue table changed."""
        c, state = self.parts, self.state
        async with self.lock:
            changed = False
            subs = state.subscriptions()
            for topic in sorted(subs):
                queues = await self._queues_of(topic)
                if not queues:
                    continue
                ids = await self.consumer_ids(topic) if c.clustering else None
                allocated = allocate_topic(c.settings.message_model, self.strategy, c.group,
                                           c.instance.client_id, queues, ids)
                if allocated is None:
                    continue
                p = plan(topic, state.table, allocated, state.stalled(PULL_EXPIRY_MS))
                for mq in p.remove:
                    await self.remove_queue(mq)
                    changed = True
                for mq in p.add:
                    changed = await self._add_queue(mq) or changed
            for mq in not_subscribed(state.table, set(subs)):
                await self.remove_queue(mq)
                changed = True
            await self.unlock_parked()
            if changed:
                log.info("group %s: client %s now owns %s", c.group, c.instance.client_id,
                         [f"{m.topic}:{m.broker_name}:{m.queue_id}" for m in state.assignment()])
                await c.instance.send_heartbeat_to_all()
            return changed

    async def consumer_ids(self, topic: str) -> list[str] | None:
        """The group's members as a broker of ``topic`` knows them (None when none answered)."""
        c = self.parts
        route = c.instance.routes.get(topic)
        if route is None or not route.broker_datas:
            return None
        brokers = list(route.broker_datas)
        random.shuffle(brokers)
        for bd in brokers:
            addr = bd.select_broker_addr()
            if addr is None:
                continue
            cmd = RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": c.group})
            try:
                resp = check_response(await c.instance.invoke(addr, cmd), addr)
                return ConsumerIdList.from_json(resp.payload or b"{}").consumer_id_list
            except (MQError, ValueError) as e:
                log.warning("group %s: member list from %s failed: %s", c.group, addr, e)
        return None

    async def _add_queue(self, mq: MessageQueue) -> bool:
        c, state = self.parts, self.state
        old = state.parked.get(mq)
        if old is not None:
            if old.consume_locked:
                return False  # the previous process queue's batch still runs; next rebalance
            state.unpark(mq)  # given back to us before it was unlocked: keep the lock
            offset = c.offset_store.read_memory(mq)
            if offset >= 0:
                with contextlib.suppress(MQError):
                    await c.persist_offset(mq, offset, sync=True)  # its last batch is done: start after it
        if self._orderly_clustering and not await self.lock_queue(mq):
            log.info("group %s: %s is locked by another consumer; trying again later", c.group, mq)
            return False
        c.offset_store.remove(mq)
        try:
            offset = await self._start_offset(mq)
        except MQError as e:
            log.warning("group %s: cannot find where to start %s: %s", c.group, mq, e)
            if self._orderly_clustering:
                await self._unlock([mq])
            return False
        pq = ProcessQueue()
        if self._orderly_clustering:
            pq.locked, pq.last_lock_ms = True, now_ms()
        state.assign(mq, pq)
        log.info("group %s: start consuming %s at offset %d", c.group, mq, offset)
        self.fetch(PullRequest(mq, pq, offset))
        return True

    async def _start_offset(self, mq: MessageQueue) -> int:
        c = self.parts
        stored = await c.offset_store.read_store(mq)
        pos = start_position(c.settings.consume_from, stored, mq.topic)
        if isinstance(pos, int):
            return pos
        if pos == "max":
            return await c.instance.max_offset(mq)
        if pos == "min":
            return await c.instance.min_offset(mq)
        ts = c.settings.consume_timestamp_ms or (now_ms() - 30 * 60_000)
        return await c.instance.search_offset(mq, ts)

    async def remove_queue(self, mq: MessageQueue, *, persist: bool = True) -> None:
        """Give ``mq`` up: its process queue is dropped; its offset persisted (orderly clustering:
        once the lock is released, see :meth:`unlock_parked`)."""
        c = self.parts
        pq = self.state.unassign(mq, park=self._orderly_clustering)
        if pq is None:
            return
        log.info("group %s: stop consuming %s", c.group, mq)
        if self._orderly_clustering:
            return  # parked: unlocked (and offset persisted) once the consume lock is free
        if persist:
            with contextlib.suppress(MQError):
                await c.offset_store.persist(mq)
        c.offset_store.remove(mq)

    async def unlock_parked(self) -> None:
        """Persist the offsets of parked queues whose last batch has ended, then release their locks."""
        c = self.parts
        for mq in self.state.unlockable():
            offset = c.offset_store.read_memory(mq)
            if offset >= 0:
                try:
                    await c.persist_offset(mq, offset, sync=True)
                except MQError as e:
                    log.warning("group %s: persisting %s before unlocking failed: %s", c.group, mq, e)
            c.offset_store.remove(mq)
            await self._unlock([mq])

    def batch_done(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        """The orderly service finished a batch of ``mq``: a parked queue may be unlocked now."""
        if pq.dropped and self.state.parked.get(mq) is pq:
            self.tasks.spawn(self.unlock_parked())

    async def offset_moved(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        """The fetcher stored a moved offset of ``mq``: restart the queue there at the next rebalance."""
        if self.state.table.get(mq) is pq:
            await self.remove_queue(mq, persist=False)
        self.soon()

    # -- orderly locks --------------------------------------------------------------------------
    async def lock_queue(self, mq: MessageQueue) -> bool:
        """LOCK_BATCH_MQ for one queue; True when this client holds it now."""
        c = self.parts
        try:
            ok = mq in await lock_batch(c.instance, c.group, mq.broker_name, [mq])
        except MQError as e:
            log.warning("group %s: locking %s failed: %s", c.group, mq, e)
            return False
        pq = self.state.table.get(mq)
        if pq is not None and ok:
            pq.locked, pq.last_lock_ms = True, now_ms()
        return ok

    async def lock_all(self) -> None:
        """Renew the broker locks of every owned queue (every ``rebalance.lock_interval``)."""
        c, table = self.parts, self.state.table
        for broker, mqs in by_broker(sorted(table)).items():
            try:
                ok = await lock_batch(c.instance, c.group, broker, mqs)
            except MQError as e:
                log.warning("group %s: renewing locks on %s failed: %s", c.group, broker, e)
                continue
            for mq in mqs:
                pq = table.get(mq)
                if pq is None:
                    continue
                if mq in ok:
                    pq.locked, pq.last_lock_ms = True, now_ms()
                else:
                    log.warning("group %s: lost the lock of %s", c.group, mq)
                    pq.locked = False

    async def _unlock(self, mqs: list[MessageQueue]) -> None:
        if mqs:
            await unlock_batches(self.parts.instance, self.parts.group, mqs)

    async def release_all(self) -> None:
        """Shutdown: drop every process queue and release the orderly locks of all owned queues."""
        owned = sorted(self.state.owned())
        self.state.clear()
        if self._orderly_clustering and owned:
            await self._unlock(owned)

    # -- reset ----------------------------------------------------------------------------------
    async def reset_offsets(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: drop ``topic``'s queues and restart them at ``offsets``."""
        c, state = self.parts, self.state
        mine = state.of_topic(topic)
        for pq in mine.values():
            pq.dropped = True
            pq.clear()
        await asyncio.sleep(RESET_DELAY)
        async with self.lock:
            for mq, pq in mine.items():
                if mq in offsets:
                    c.offset_store.update(mq, offsets[mq])
                    try:
                        await c.persist_offset(mq, offsets[mq], sync=True)
                    except MQError as e:
                        log.warning("group %s: storing the reset offset of %s failed: %s", c.group, mq, e)
                if state.table.get(mq) is pq:
                    await self.remove_queue(mq, persist=False)
            for mq, off in offsets.items():
                if mq.topic == topic and mq not in mine and not c.clustering:
                    c.offset_store.update(mq, off)
                    await c.offset_store.persist(mq)
            await self.unlock_parked()
        self.soon()
