"""The push consumer (Java ``DefaultMQPushConsumer``): subscribe, and a listener is called with messages.

Moving parts, all on the client's event loop:

- **Rebalance** (:mod:`.rebalance`, :mod:`.allocate`) at start, every ``rebalance.interval`` seconds
  and at once when a broker says the group's members changed (NOTIFY_CONSUMER_IDS_CHANGED). It keeps
  the *process-queue table*: one :class:`~.process_queue.ProcessQueue` per owned queue. A new queue
  (after LOCK_BATCH_MQ in orderly clustering mode) starts at the stored offset or per
  ``consume_from``; a removed one is dropped, its offset persisted, its broker lock released once
  its consume lock is free.
- **Pulling** (:mod:`.pull_service`): one loop over reusable pull requests (queue, process queue,
  next offset), long polling, flow control, ``suggestWhichBrokerId``, PULL_OFFSET_MOVED handling.
- **Consumption** (:mod:`.consume_service`): concurrent or orderly.
- **Offsets** (:mod:`.offset_store`): on the brokers for CLUSTERING, in ``offsets.json`` for
  BROADCASTING; persisted every ``persist_interval``, on rebalance and at shutdown.
- **Broker requests** routed by the client instance: 40 → rebalance now, 220 → :meth:`on_reset_offset`,
  307 → :meth:`running_info`.

Invariants: the pull loop never pulls a dropped process queue; in orderly clustering mode a queue is
pulled and consumed only while its broker lock is held; shutdown stops every task and worker thread
this consumer started.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import time
from typing import Any

from pyrocketmq.remoting.body import (
    ConsumerData,
    ConsumerIdList,
    MessageQueue,
    SubscriptionData,
)
from pyrocketmq.remoting.code import RequestCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.names import RETRY_GROUP_TOPIC_PREFIX
from pyrocketmq.service import Service, Services

from .allocate import STRATEGY_NAMES, strategy_for
from .consume_service import (
    ConcurrentConsumeService,
    ConsumeContext,
    ConsumeResult,
    Listener,
    OrderlyConsumeService,
)
from .consumer_stats import ConsumerStats, running_info_doc
from .errors import MQClientError, MQError
from .instance import ClientInstance, check_response
from .message import check_topic
from .offset_store import LocalOffsetStore, OffsetStore, RemoteOffsetStore
from .process_queue import ProcessQueue, now_ms
from .pull_service import PullRequest, PullService
from .pulling import Subscription, parse_expression
from .queue_locks import by_broker, lock_batch, unlock_batches
from .rebalance import (
    BROADCASTING,
    CLUSTERING,
    allocate_topic,
    not_subscribed,
    plan,
    rebalance_wait,
    retry_topic,
    start_position,
)
from .settings import ClientSettings, PushConsumerSettings

ROUTE_PATIENCE_MS = 10_000
"""A subscribed topic without a route this long after start is worth a warning."""
log = logging.getLogger("pyrocketmq.client")

__all__ = ["ConsumeContext", "ConsumeResult", "PushConsumer"]

#: Seconds between dropping the queues of a reset topic and restarting them at the new offsets.
RESET_DELAY = 1.0
PULL_EXPIRY_MS = 120_000
_FROM_WHERE = {"last": "CONSUME_FROM_LAST_OFFSET", "first": "CONSUME_FROM_FIRST_OFFSET", "timestamp": "CONSUME_FROM_TIMESTAMP"}


class PushConsumer:
    """A push consumer of one consumer group (asyncio core).

    Example::

        async def on_messages(msgs, ctx):
            for m in msgs:
                print(m.topic, m.queue_offset, m.body)
            return ConsumeResult.SUCCESS

        consumer = PushConsumer("my-group", "127.0.0.1:9876")
        consumer.subscribe("TopicTest", "TagA || TagB")
        consumer.register_listener(on_messages)            # orderly=True for per-queue order
        await consumer.start()
        ...
        await consumer.shutdown()

    A plain function listener runs on ``settings.consume.workers`` threads; a coroutine function
    runs on the loop. It gets ``(messages, context)`` (or only ``messages`` if it takes one
    argument) and answers a :class:`ConsumeResult`; an exception counts as a failure.
    """

    def __init__(
        self,
        group: str,
        namesrv_addr: str = "127.0.0.1:9876",
        settings: PushConsumerSettings | None = None,
        client: ClientSettings | None = None,
    ) -> None:
        if not group:
            raise MQClientError("the consumer group is empty: give a group name")
        self.group = group
        self.settings = settings or PushConsumerSettings()
        s = self.settings
        if s.message_model not in (CLUSTERING, BROADCASTING):
            raise MQClientError(f"message_model={s.message_model!r}: use 'CLUSTERING' or 'BROADCASTING'")
        if s.consume_from not in _FROM_WHERE:
            raise MQClientError(f"consume_from={s.consume_from!r}: use 'last', 'first' or 'timestamp'")
        if s.rebalance.strategy not in STRATEGY_NAMES:
            raise MQClientError(f"rebalance.strategy={s.rebalance.strategy!r}: use one of {', '.join(STRATEGY_NAMES)}")
        self.client_settings = client or ClientSettings()
        self.client_settings.namesrv_addr = namesrv_addr or self.client_settings.namesrv_addr
        self._strategy = strategy_for(s.rebalance.strategy, config_queues=s.rebalance.config_queues,
                                      virtual_nodes=s.rebalance.virtual_nodes)
        self._subs: dict[str, Subscription] = {}
        self._listener: Listener | None = None
        self._orderly = False
        self._instance: ClientInstance | None = None
        self.offset_store: OffsetStore = OffsetStore(group)
        self.consume_service: ConcurrentConsumeService | OrderlyConsumeService | None = None
        self.table: dict[MessageQueue, ProcessQueue] = {}
        self._pending_unlock: dict[MessageQueue, ProcessQueue] = {}
        self._topic_queues: dict[str, list[MessageQueue]] = {}
        self.sub_version = int(time.time() * 1000)
        self._tasks: list[asyncio.Task[None]] = []
        self._services = Services()
        self._rebalancer: Service | None = None
        self._pulls: set[asyncio.Task[None]] = set()
        self._timers: set[asyncio.TimerHandle] = set()
        self.pulls = PullService(self)
        self._rebalance_lock: asyncio.Lock | None = None
        self._running = False
        self._started_ms = 0
        self._route_warned: set[str] = set()
        self.stats = ConsumerStats(group=group, metrics=self.settings.metrics)

    # -- configuration --------------------------------------------------------------------------
    def subscribe(self, topic: str, expression: str = "*") -> None:
        """Consume ``topic``'s messages whose tag matches ``expression`` (``*`` or ``TagA || TagB``)."""
        check_topic(topic)
        self._subs[topic] = parse_expression(expression)
        if self._running:
            self.spawn(self._after_subscription_change())

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic`` (its queues are dropped at the next rebalance)."""
        self._subs.pop(topic, None)
        if self._running:
            self.spawn(self._after_subscription_change())

    def register_listener(self, listener: Listener, *, orderly: bool = False) -> None:
        """Set the listener (before :meth:`start`); ``orderly`` consumes each queue in offset order."""
        if self._running:
            raise MQClientError("register the listener before start()")
        self._listener = listener
        self._orderly = orderly

    @property
    def running(self) -> bool:
        return self._running

    @property
    def orderly(self) -> bool:
        return self._orderly

    @property
    def clustering(self) -> bool:
        return self.settings.message_model == CLUSTERING

    @property
    def instance(self) -> ClientInstance:
        if self._instance is None:
            raise MQClientError("the consumer is not started: call 'await consumer.start()' first")
        return self._instance

    def subscriptions(self) -> dict[str, Subscription]:
        subs = dict(self._subs)
        if self.clustering:
            subs.setdefault(retry_topic(self.group), parse_expression("*"))
        return subs

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Join the client instance, register the group, rebalance and start pulling (idempotent)."""
        if self._running:
            return
        if self._listener is None:
            raise MQClientError("no listener: call register_listener(fn) before start()")
        inst = ClientInstance.acquire(self.client_settings)
        try:
            inst.register_consumer(self.group, self)
            await inst.start()
        except BaseException:
            await inst.release()
            raise
        try:
            await self._start_on(inst)
        except BaseException:
            self._running = False
            self._instance = None
            await inst.unregister_consumer(self.group)
            await inst.release()
            raise

    async def _start_on(self, inst: ClientInstance) -> None:
        self._instance = inst
        s = self.settings
        if self.clustering:
            self.offset_store = RemoteOffsetStore(self.group, inst)
        else:
            folder = s.offset_store_dir or os.path.join(os.path.expanduser("~"), ".rocketmq_offsets", inst.client_id)
            self.offset_store = LocalOffsetStore(self.group, folder)
        await self.offset_store.load()
        service_cls = OrderlyConsumeService if self._orderly else ConcurrentConsumeService
        assert self._listener is not None  # start() refuses to run without one
        self.consume_service = service_cls(self, self._listener)
        self._rebalance_lock = asyncio.Lock()
        self._running = True
        self._started_ms = now_ms()
        self.stats = ConsumerStats(group=self.group, metrics=self.settings.metrics)
        await self._refresh_routes()
        await inst.send_heartbeat_to_all()
        self._tasks.append(asyncio.create_task(self.pulls.run()))
        name = f"group {self.group}"
        add = self._services.add
        wait = lambda: rebalance_wait(self.subscriptions(), self._topic_queues, self.settings.rebalance.interval)  # noqa: E731
        self._rebalancer = add(Service(f"{name}: rebalance", self.rebalance, wait, first_wait=False, logger=log))
        add(Service(f"{name}: offset persist", self.persist_offsets, s.persist_interval, logger=log))
        if self._orderly and self.clustering:
            add(Service(f"{name}: queue locks", self.lock_all, s.rebalance.lock_interval, logger=log))
        if not self._orderly:
            add(Service(f"{name}: expired messages", self._clean_expired, min(60.0, s.consume.timeout_minutes * 60),
                        logger=log))
        self._services.start()

    async def shutdown(self, grace: float = 10.0) -> None:
        """Stop pulling, let running listener calls finish (up to ``grace`` s), persist offsets,
        release orderly locks, unregister the group and release the client instance."""
        inst = self._instance
        if inst is None or not self._running:
            return
        self._running = False
        for h in self._timers:
            h.cancel()
        self._timers.clear()
        await self._services.stop()
        tasks = self._tasks + list(self._pulls)
        self._tasks = []
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.consume_service is not None:
            await self.consume_service.stop(grace)
        owned = set(self.table) | set(self._pending_unlock)
        await self.persist_offsets(sync=True)
        for pq in self.table.values():
            pq.dropped = True
        if self._orderly and self.clustering and owned:
            await self._unlock(sorted(owned))
        self.table.clear()
        self._pending_unlock.clear()
        self._instance = None
        await inst.unregister_consumer(self.group)
        await inst.release()

    async def __aenter__(self) -> PushConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def spawn(self, coro: Any) -> None:
        if not self._running:
            coro.close()
            return
        task = asyncio.get_running_loop().create_task(coro)
        self._pulls.add(task)
        task.add_done_callback(self._pulls.discard)

    def later(self, delay: float, fn: Any, *args: Any) -> None:
        if not self._running:
            return
        handle: asyncio.TimerHandle

        def fire() -> None:
            self._timers.discard(handle)
            if self._running:
                fn(*args)

        handle = asyncio.get_running_loop().call_later(max(0.0, delay), fire)
        self._timers.add(handle)

    async def _after_subscription_change(self) -> None:
        await self._refresh_routes()
        await self.instance.send_heartbeat_to_all()
        self.rebalance_soon()

    async def _refresh_routes(self) -> None:
        inst = self.instance
        for topic in sorted(self.subscriptions()):
            try:
                self._topic_queues[topic] = await inst.subscribe_queues(topic)
            except MQError as e:
                # DEBUG/INFO: a topic a producer has just created is routed within moments;
                # rebalance() warns if it still is not after ROUTE_PATIENCE_MS.
                level = logging.DEBUG if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else logging.INFO
                log.log(level, "group %s: no route for %s yet: %s", self.group, topic, e)

    # -- rebalance ------------------------------------------------------------------------------
    def _warn_unrouted(self, topic: str, e: MQError) -> None:
        if (topic in self._route_warned or topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
                or now_ms() - self._started_ms < ROUTE_PATIENCE_MS):
            return
        self._route_warned.add(topic)
        log.warning("group %s: topic %s still has no route after %d s: %s", self.group, topic,
                    ROUTE_PATIENCE_MS // 1000, e)

    def rebalance_soon(self) -> None:
        if self._rebalancer is not None:
            self._rebalancer.wakeup()

    async def rebalance(self) -> bool:
        """One rebalance of every subscribed topic; True when the process-queue table changed."""
        assert self._rebalance_lock is not None
        async with self._rebalance_lock:
            changed = False
            subs = self.subscriptions()
            for topic in sorted(subs):
                queues = self._topic_queues.get(topic)
                if not queues:
                    try:
                        queues = self._topic_queues[topic] = await self.instance.subscribe_queues(topic)
                    except MQError as e:
                        self._warn_unrouted(topic, e)
                    if queues:  # a route at last: its brokers must know this member before it asks who else is in the group
                        with contextlib.suppress(MQError):
                            await self.instance.send_heartbeat_to_all()
                if not queues:
                    continue
                ids = await self.consumer_ids(topic) if self.clustering else None
                allocated = allocate_topic(self.settings.message_model, self._strategy, self.group,
                                           self.instance.client_id, queues, ids)
                if allocated is None:
                    continue
                stalled = [mq for mq, pq in self.table.items() if pq.pull_expired(PULL_EXPIRY_MS)]
                p = plan(topic, self.table, allocated, stalled)
                for mq in p.remove:
                    await self.remove_queue(mq)
                    changed = True
                for mq in p.add:
                    changed = await self._add_queue(mq) or changed
            for mq in not_subscribed(self.table, set(subs)):
                await self.remove_queue(mq)
                changed = True
            await self._process_pending_unlocks()
            if changed:
                log.info("group %s: client %s now owns %s", self.group, self.instance.client_id,
                         [f"{m.topic}:{m.broker_name}:{m.queue_id}" for m in sorted(self.table)])
                await self.instance.send_heartbeat_to_all()
            return changed

    async def consumer_ids(self, topic: str) -> list[str] | None:
        """The group's members as a broker of ``topic`` knows them (None when none answered)."""
        inst = self.instance
        route = inst.routes.get(topic)
        if route is None or not route.broker_datas:
            return None
        brokers = list(route.broker_datas)
        random.shuffle(brokers)
        for bd in brokers:
            addr = bd.select_broker_addr()
            if addr is None:
                continue
            cmd = RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": self.group})
            try:
                resp = check_response(await inst.invoke(addr, cmd), addr)
                return ConsumerIdList.from_json(resp.payload or b"{}").consumer_id_list
            except (MQError, ValueError) as e:
                log.warning("group %s: member list from %s failed: %s", self.group, addr, e)
        return None

    async def _add_queue(self, mq: MessageQueue) -> bool:
        old = self._pending_unlock.get(mq)
        if old is not None:
            if old.consume_locked:
                return False  # the previous process queue's batch still runs; next rebalance
            del self._pending_unlock[mq]  # given back to us before it was unlocked: keep the lock
            offset = self.offset_store.read_memory(mq)
            if offset >= 0:
                with contextlib.suppress(MQError):
                    await self.persist_offset(mq, offset, sync=True)  # its last batch is done: start after it
        if self._orderly and self.clustering and not await self.lock_queue(mq):
            log.info("group %s: %s is locked by another consumer; trying again later", self.group, mq)
            return False
        self.offset_store.remove(mq)
        try:
            offset = await self._start_offset(mq)
        except MQError as e:
            log.warning("group %s: cannot find where to start %s: %s", self.group, mq, e)
            if self._orderly and self.clustering:
                await self._unlock([mq])
            return False
        pq = ProcessQueue()
        if self._orderly and self.clustering:
            pq.locked, pq.last_lock_ms = True, now_ms()
        self.table[mq] = pq
        log.info("group %s: start consuming %s at offset %d", self.group, mq, offset)
        self.pulls.execute(PullRequest(mq, pq, offset))
        return True

    async def _start_offset(self, mq: MessageQueue) -> int:
        inst = self.instance
        stored = await self.offset_store.read_store(mq)
        pos = start_position(self.settings.consume_from, stored, mq.topic)
        if isinstance(pos, int):
            return pos
        if pos == "max":
            return await inst.max_offset(mq)
        if pos == "min":
            return await inst.min_offset(mq)
        ts = self.settings.consume_timestamp_ms or (now_ms() - 30 * 60_000)
        return await inst.search_offset(mq, ts)

    async def remove_queue(self, mq: MessageQueue, *, persist: bool = True) -> None:
        pq = self.table.pop(mq, None)
        if pq is None:
            return
        pq.dropped = True
        log.info("group %s: stop consuming %s", self.group, mq)
        if self._orderly and self.clustering:
            self._pending_unlock[mq] = pq  # unlocked (and offset persisted) once the consume lock is free
            return
        if persist:
            with contextlib.suppress(MQError):
                await self.offset_store.persist(mq)
        self.offset_store.remove(mq)

    async def _process_pending_unlocks(self) -> None:
        for mq, pq in list(self._pending_unlock.items()):
            if pq.consume_locked or mq in self.table:
                continue
            self._pending_unlock.pop(mq, None)
            offset = self.offset_store.read_memory(mq)
            if offset >= 0:
                try:
                    await self.persist_offset(mq, offset, sync=True)
                except MQError as e:
                    log.warning("group %s: persisting %s before unlocking failed: %s", self.group, mq, e)
            self.offset_store.remove(mq)
            await self._unlock([mq])

    def after_orderly_batch(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        """Called by the orderly service after each batch: a dropped queue may be unlocked now."""
        if pq.dropped and self._pending_unlock.get(mq) is pq:
            self.spawn(self._process_pending_unlocks())

    # -- orderly locks --------------------------------------------------------------------------
    async def lock_queue(self, mq: MessageQueue) -> bool:
        """LOCK_BATCH_MQ for one queue; True when this client holds it now."""
        try:
            ok = mq in await lock_batch(self.instance, self.group, mq.broker_name, [mq])
        except MQError as e:
            log.warning("group %s: locking %s failed: %s", self.group, mq, e)
            return False
        pq = self.table.get(mq)
        if pq is not None and ok:
            pq.locked, pq.last_lock_ms = True, now_ms()
        return ok

    async def lock_all(self) -> None:
        """Renew the broker locks of every owned queue (every ``rebalance.lock_interval``)."""
        for broker, mqs in by_broker(sorted(self.table)).items():
            try:
                ok = await lock_batch(self.instance, self.group, broker, mqs)
            except MQError as e:
                log.warning("group %s: renewing locks on %s failed: %s", self.group, broker, e)
                continue
            for mq in mqs:
                pq = self.table.get(mq)
                if pq is None:
                    continue
                if mq in ok:
                    pq.locked, pq.last_lock_ms = True, now_ms()
                else:
                    log.warning("group %s: lost the lock of %s", self.group, mq)
                    pq.locked = False

    async def _unlock(self, mqs: list[MessageQueue]) -> None:
        if self._instance is not None and mqs:
            await unlock_batches(self._instance, self.group, mqs)

    # -- offsets ----------------------------------------------------------------------------------
    async def persist_offset(self, mq: MessageQueue, offset: int, *, sync: bool) -> None:
        if self.clustering:
            await self.instance.update_consumer_offset(self.group, mq, offset, oneway=not sync)
        else:
            await self.offset_store.persist(mq)

    async def persist_offsets(self, sync: bool = False) -> None:
        """Write every owned queue's offset out (oneway to the brokers unless ``sync``)."""
        owned = set(self.table) | set(self._pending_unlock)
        if sync and self.clustering:
            todo = {mq: off for mq in owned if (off := self.offset_store.read_memory(mq)) >= 0}
            results = await asyncio.gather(*(self.persist_offset(mq, off, sync=True) for mq, off in todo.items()),
                                           return_exceptions=True)
            for (mq, _), r in zip(todo.items(), results, strict=True):
                if isinstance(r, BaseException):
                    log.warning("group %s: persisting the offset of %s failed: %s", self.group, mq, r)
            return
        await self.offset_store.persist_all(owned)

    async def _clean_expired(self) -> None:
        service = self.consume_service
        if isinstance(service, ConcurrentConsumeService):
            for mq, pq in list(self.table.items()):
                await service.clean_expired(pq, mq)

    # -- hooks for the client instance ----------------------------------------------------------
    def topics(self) -> set[str]:
        return set(self.subscriptions())

    def consumer_data(self) -> ConsumerData:
        subs = tuple(
            SubscriptionData.build(t, sub.expression, self.sub_version) for t, sub in sorted(self.subscriptions().items())
        )
        return ConsumerData(
            group_name=self.group,
            consume_type="CONSUME_PASSIVELY",
            message_model=self.settings.message_model,
            consume_from_where=_FROM_WHERE[self.settings.consume_from],
            subscription_data_set=subs,
            unit_mode=False,
        )

    def on_route_changed(self, topic: str, queues: list[MessageQueue]) -> None:
        self._topic_queues[topic] = queues

    def on_consumer_ids_changed(self) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED: rebalance now."""
        self.rebalance_soon()

    def on_reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: drop ``topic``'s queues and restart them at ``offsets``."""
        log.info("group %s: broker asks to reset %s to %s", self.group, topic,
                 {f"{m.broker_name}:{m.queue_id}": o for m, o in sorted(offsets.items())})
        self.spawn(self._reset_offsets(topic, offsets))

    async def _reset_offsets(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        mine = {mq: pq for mq, pq in self.table.items() if mq.topic == topic}
        for pq in mine.values():
            pq.dropped = True
            pq.clear()
        await asyncio.sleep(RESET_DELAY)
        assert self._rebalance_lock is not None
        async with self._rebalance_lock:
            for mq, pq in mine.items():
                if mq in offsets:
                    self.offset_store.update(mq, offsets[mq])
                    try:
                        await self.persist_offset(mq, offsets[mq], sync=True)
                    except MQError as e:
                        log.warning("group %s: storing the reset offset of %s failed: %s", self.group, mq, e)
                if self.table.get(mq) is pq:
                    await self.remove_queue(mq, persist=False)
            for mq, off in offsets.items():
                if mq.topic == topic and mq not in mine and not self.clustering:
                    self.offset_store.update(mq, off)
                    await self.offset_store.persist(mq)
            await self._process_pending_unlocks()
        self.rebalance_soon()

    def running_info(self) -> dict[str, Any]:
        """ConsumerRunningInfo for GET_CONSUMER_RUNNING_INFO (307)."""
        return running_info_doc(
            orderly=self._orderly, settings=self.settings, namesrv_addr=self.client_settings.namesrv_addr,
            started_ms=self._started_ms, from_where=_FROM_WHERE[self.settings.consume_from],
            subscriptions=self.consumer_data().subscription_data_set, table=self.table,
            offset_store=self.offset_store, stats=self.stats,
        )

    def assignment(self) -> list[MessageQueue]:
        """The queues this consumer owns now (sorted)."""
        return sorted(self.table)
