"""The push consumer (Java ``DefaultMQPushConsumer``): subscribe, and a listener is called with messages.

A composition of parts that never reach back into it (:mod:`.push_parts`), all on the client's
event loop:

- **State** (:mod:`.subscription_state`): subscriptions, routes, the process-queue table. Never awaits.
- **Rebalance** (:mod:`.rebalance_service`, deciding with :mod:`.rebalance` and :mod:`.allocate`)
  at start, every ``rebalance.interval`` seconds and at once when a broker says the group's members
  changed (NOTIFY_CONSUMER_IDS_CHANGED): owns the queues, hands each new one to the fetcher.
- **Fetcher** (:mod:`.pull_service`): one loop over reusable pull requests (queue, process queue,
  next offset), long polling, flow control, ``suggestWhichBrokerId``, PULL_OFFSET_MOVED handling.
- **Consumption** (:mod:`.consume_service`): concurrent or orderly; the fetcher submits to it.
- **Offsets** (:mod:`.offset_store`): on the brokers for CLUSTERING, in ``offsets.json`` for
  BROADCASTING; persisted every ``persist_interval``, on rebalance and at shutdown.
- **Broker requests** routed by the client instance: 40 → rebalance now, 220 → :meth:`on_reset_offset`,
  307 → :meth:`running_info`.

Invariants: the fetcher never pulls a dropped process queue; in orderly clustering mode a queue is
pulled and consumed only while its broker lock is held; shutdown stops every task and worker thread
this consumer started.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from pyrocketmq.remoting.body import CheckClientRequestBody, ConsumerData, MessageQueue, SubscriptionData
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.service import Service, Services

from .allocate import STRATEGY_NAMES, strategy_for
from .consume_service import (
    ConcurrentConsumeService,
    ConsumeContext,
    ConsumeResult,
    Listener,
    OrderlyConsumeService,
)
from .consumer_base import Consumer
from .consumer_stats import ConsumerStats, running_info_doc
from .errors import MQBrokerError, MQClientError
from .instance import ClientInstance
from .message import check_topic
from .offset_store import LocalOffsetStore, OffsetStore, RemoteOffsetStore
from .producer import start_tracer
from .pull_service import FetchPlan, PullService
from .pulling import Selector, Subscription, parse_expression
from .push_parts import ConsumerParts
from .rebalance import BROADCASTING, CLUSTERING
from .rebalance_service import RebalanceService
from .settings import PushConsumerSettings
from .subscription_state import SubscriptionState
from .tasks import TaskSet

log = logging.getLogger("pyrocketmq.client")

__all__ = ["ConsumeContext", "ConsumeResult", "PushConsumer"]

_FROM_WHERE = {
    "last": "CONSUME_FROM_LAST_OFFSET",
    "first": "CONSUME_FROM_FIRST_OFFSET",
    "timestamp": "CONSUME_FROM_TIMESTAMP",
}


class PushConsumer(Consumer[PushConsumerSettings]):
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

    def _default_settings(self) -> PushConsumerSettings:
        return PushConsumerSettings()

    def _setup(self) -> None:
        s, group = self.settings, self.group
        if s.message_model not in (CLUSTERING, BROADCASTING):
            raise MQClientError(f"message_model={s.message_model!r}: use 'CLUSTERING' or 'BROADCASTING'")
        if s.rebalance.strategy not in STRATEGY_NAMES:
            raise MQClientError(
                f"rebalance.strategy={s.rebalance.strategy!r}: use one of {', '.join(STRATEGY_NAMES)}"
            )
        self._strategy = strategy_for(s.rebalance.strategy, config_queues=s.rebalance.config_queues,
                                      virtual_nodes=s.rebalance.virtual_nodes)
        self.state = SubscriptionState(group, s.message_model)
        self._listener: Listener | None = None
        self._orderly = False
        self.offset_store: OffsetStore = OffsetStore(group)
        self.stats = ConsumerStats(group=group, metrics=self.settings.metrics)
        # The parts, made by start():
        self.tasks = TaskSet()
        self.consume_service: ConcurrentConsumeService | OrderlyConsumeService | None = None
        self.fetcher: PullService | None = None
        self.rebalancer: RebalanceService | None = None
        self.parts: ConsumerParts | None = None
        self._services = Services()
        self._running = False
        self._started_ms = 0

    # -- configuration --------------------------------------------------------------------------
    def subscribe(self, topic: str, expression: Selector = "*") -> None:
        """Consume ``topic``'s messages whose tag matches ``expression`` (``*`` or ``TagA || TagB``),
        or that a ``MessageSelector.by_sql(...)`` selects (the broker needs ``enablePropertyFilter``)."""
        check_topic(topic)
        self.state.subscribe(topic, parse_expression(expression))
        if self._running:
            self.tasks.spawn(self._after_subscription_change())

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic`` (its queues are dropped at the next rebalance)."""
        self.state.unsubscribe(topic)
        if self._running:
            self.tasks.spawn(self._after_subscription_change())

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
        return self.state.clustering

    def subscriptions(self) -> dict[str, Subscription]:
        return self.state.subscriptions()

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Join the client instance, register the group, rebalance and start pulling (idempotent)."""
        if self._running:
            return
        if self._listener is None:
            raise MQClientError("no listener: call register_listener(fn) before start()")
        inst = await self._join()
        try:
            await self._start_on(inst)
        except BaseException:
            self._running = False
            if self.parts is not None and self.parts.tracer is not None:
                await self.parts.tracer.close()
            await self.tasks.close()
            await self._leave(inst)
            raise

    async def _start_on(self, inst: ClientInstance) -> None:
        self._instance = inst
        s = self.settings
        if self.clustering:
            self.offset_store = RemoteOffsetStore(self.group, inst)
        else:
            folder = s.offset_store_dir or os.path.join(
                os.path.expanduser("~"), ".rocketmq_offsets", inst.client_id
            )
            self.offset_store = LocalOffsetStore(self.group, folder)
        await self.offset_store.load()
        self.stats = ConsumerStats(group=self.group, metrics=self.settings.metrics)
        tracer = None
        if s.trace:
            tracer = await start_tracer(self.client_settings, s.trace_topic)
        self.parts = parts = ConsumerParts(
            self.group, s, inst, self.offset_store, self.stats, self.state, self._orderly, tracer
        )
        self.tasks = tasks = TaskSet()
        self.rebalancer = rebalancer = RebalanceService(
            parts, self._strategy, tasks, fetch=lambda r: fetcher.execute(r)
        )
        assert self._listener is not None  # start() refuses to run without one
        service: ConcurrentConsumeService | OrderlyConsumeService
        if self._orderly:
            service = OrderlyConsumeService(parts, self._listener, lock_queue=rebalancer.lock_queue,
                                            on_batch_done=rebalancer.batch_done)
        else:
            service = ConcurrentConsumeService(parts, self._listener)
        self.consume_service = service
        plan = FetchPlan(s.pull, s.flow, orderly=self._orderly, clustering=self.clustering)
        self.fetcher = fetcher = PullService(
            parts, plan, tasks, on_offset_moved=rebalancer.offset_moved,
            submit=lambda req, msgs, dispatch: service.submit(msgs, req.pq, req.mq, dispatch),
        )
        self._running = True
        self._started_ms = rebalancer.started_ms
        await rebalancer.refresh_routes()
        for sub in self.consumer_data().subscription_data_set:
            if sub.expression_type != "TAG":  # a selector the brokers cannot serve fails start(), as in Java
                await check_client_config(inst, self.group, sub)
        await inst.send_heartbeat_to_all()
        fetcher.start()
        name = f"group {self.group}"
        add = self._services.add
        add(rebalancer.loop)
        add(Service(f"{name}: offset persist", self.persist_offsets, s.persist_interval, logger=log))
        if self._orderly and self.clustering:
            add(Service(f"{name}: queue locks", rebalancer.lock_all, s.rebalance.lock_interval, logger=log))
        if not self._orderly:
            add(
                Service(
                    f"{name}: expired messages",
                    self._clean_expired,
                    min(60.0, s.consume.timeout_minutes * 60),
                    logger=log,
                )
            )
        self._services.start()

    async def shutdown(self, grace: float = 10.0) -> None:
        """Stop pulling, let running listener calls finish (up to ``grace`` s), persist offsets,
        release orderly locks, unregister the group and release the client instance."""
        inst = self._instance
        if inst is None or not self._running:
            return
        self._running = False
        await self._services.stop()
        self._services = Services()
        await self.tasks.close()
        if self.consume_service is not None:
            await self.consume_service.stop(grace)
        if self.parts is not None and self.parts.tracer is not None:
            await self.parts.tracer.close()
        await self.persist_offsets(sync=True)
        if self.rebalancer is not None:
            await self.rebalancer.release_all()
        await self._leave(inst)

    async def _after_subscription_change(self) -> None:
        if self.rebalancer is None:
            return
        await self.rebalancer.refresh_routes()
        await self.instance.send_heartbeat_to_all()
        self.rebalancer.soon()

    async def rebalance(self) -> bool:
        """Rebalance now; True when the owned queues changed."""
        if self.rebalancer is None:
            raise MQClientError("the consumer is not started: call 'await consumer.start()' first")
        return await self.rebalancer.rebalance()

    # -- offsets ----------------------------------------------------------------------------------
    async def persist_offsets(self, sync: bool = False) -> None:
        """Write every owned queue's offset out (oneway to the brokers unless ``sync``)."""
        owned = self.state.owned()
        if sync and self.clustering:
            assert self.parts is not None  # clustering offsets are persisted only once started
            parts = self.parts
            todo = {mq: off for mq in owned if (off := self.offset_store.read_memory(mq)) >= 0}
            results = await asyncio.gather(
                *(parts.persist_offset(mq, off, sync=True) for mq, off in todo.items()),
                return_exceptions=True,
            )
            for (mq, _), r in zip(todo.items(), results, strict=True):
                if isinstance(r, BaseException):
                    log.warning("group %s: persisting the offset of %s failed: %s", self.group, mq, r)
            return
        await self.offset_store.persist_all(owned)

    async def _clean_expired(self) -> None:
        service = self.consume_service
        if isinstance(service, ConcurrentConsumeService):
            for mq, pq in list(self.state.table.items()):
                await service.clean_expired(pq, mq)

    # -- hooks for the client instance ----------------------------------------------------------
    def topics(self) -> set[str]:
        return set(self.subscriptions())

    def consumer_data(self) -> ConsumerData:
        subs = tuple(
            SubscriptionData.build(t, sub.expression, self.state.sub_version, sub.expression_type)
            for t, sub in sorted(self.subscriptions().items())
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
        self.state.routes[topic] = queues

    def on_consumer_ids_changed(self) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED: rebalance now."""
        if self.rebalancer is not None:
            self.rebalancer.soon()

    def on_reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: drop ``topic``'s queues and restart them at ``offsets``."""
        log.info("group %s: broker asks to reset %s to %s", self.group, topic,
                 {f"{m.broker_name}:{m.queue_id}": o for m, o in sorted(offsets.items())})
        if self.rebalancer is not None:
            self.tasks.spawn(self.rebalancer.reset_offsets(topic, offsets))

    def running_info(self) -> dict[str, Any]:
        """ConsumerRunningInfo for GET_CONSUMER_RUNNING_INFO (307)."""
        return running_info_doc(
            orderly=self._orderly, settings=self.settings, namesrv_addr=self.client_settings.namesrv_addr,
            started_ms=self._started_ms, from_where=_FROM_WHERE[self.settings.consume_from],
            subscriptions=self.consumer_data().subscription_data_set, table=self.state.table,
            offset_store=self.offset_store, stats=self.stats,
        )

    def assignment(self) -> list[MessageQueue]:
        """The queues this consumer owns now (sorted)."""
        return self.state.assignment()

    def local_offsets(self, topic: str) -> dict[MessageQueue, int]:
        """The offsets this consumer holds for its queues of ``topic`` (GET_CONSUMER_STATUS_FROM_CLIENT)."""
        return {mq: off for mq in self.state.assignment()
                if mq.topic == topic and (off := self.offset_store.read_memory(mq)) >= 0}


async def check_client_config(inst: ClientInstance, group: str, sub: SubscriptionData) -> None:
    """Ask a broker of ``sub.topic`` whether it can serve this subscription (CHECK_CLIENT_CONFIG,
    as Java consumers do at start for SQL92 ones); MQBrokerError with its answer if not."""
    if sub.topic not in inst.routes:
        await inst.update_route(sub.topic)
    route = inst.routes.get(sub.topic)
    names = sorted({q.broker_name for q in route.queue_datas}) if route else []
    addr = next((a for a in map(inst.master_addr, names) if a), None)
    if addr is None:
        return  # nothing to ask yet: the pulls will say it
    body = CheckClientRequestBody(client_id=inst.client_id, group=group, subscription_data=sub).to_json()
    resp = await inst.invoke(addr, RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, {}, body))
    if resp.code != ResponseCode.SUCCESS:
        raise MQBrokerError.for_code(resp.code, resp.remark or "", addr)
