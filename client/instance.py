"""The shared client runtime (Java's ``MQClientInstance``): one per name-server list and instance name.

A :class:`ClientInstance` owns what producers, consumers and admins of one process share:

- the connections (one :class:`~pyrocketmq.remoting.remoting_client.RemotingClient`);
- the name-server list, with failover: a request goes to the last name server that answered,
  and on a transport failure to the next one in the list;
- the route cache: ``TopicRouteData`` per topic, refreshed every ``poll_namesrv_interval`` for the
  topics in use, on demand, and every second for ``SETTLE_SECONDS`` after a broker failed for the
  topic (a rolling restart moves brokers one after another: each new address is learnt before the
  next broker goes), turned into publish info (write queues) and subscribe queues
  (read queues) by :mod:`.route`; the broker address table (name → id → address) is merged from
  every cached route;
- heartbeats every ``heartbeat_interval`` to every master (and to slaves too once a consumer is
  registered), naming the producer and consumer groups; UNREGISTER_CLIENT to all brokers when a
  group leaves or the instance shuts down;
- the answers to broker → client requests: GET_CONSUMER_RUNNING_INFO (307) is answered from the
  consumer's ``running_info()``; NOTIFY_CONSUMER_IDS_CHANGED (40), RESET_CONSUMER_CLIENT_OFFSET
  (220) and CHECK_TRANSACTION_STATE (39) are handed to the registered group's hook
  (``on_consumer_ids_changed``, ``on_reset_offset``, ``on_check_transaction``) when it has one.

Beside it: the queue-offset requests consumers and admins share (:mod:`.queue_offsets`, a part of
the instance), what a failed request raises (:mod:`.request_errors`), and the client id
``clientIP@instanceName`` with ``instanceName`` defaulting to ``pid#nanotime``, as the Java client
makes it (:mod:`.client_id`). Requests announce language PYTHON and version 407 (4.9.7).

Invariants: an instance lives on one event loop (the one that acquired it) and is shared per
``(loop, name servers, instance name)`` with a reference count (:meth:`acquire` /
:meth:`release`); transport failures surface as :class:`~.errors.MQConnectionError` or
:class:`~.errors.MQTimeoutError`, error answers as :class:`~.errors.MQBrokerError`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any, Protocol

from pyrocketmq.remoting.acl_sign import sign as acl_sign
from pyrocketmq.remoting.body import (
    ConsumerData,
    HeartbeatData,
    MessageQueue,
    ProducerData,
    TopicRouteData,
)
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.names import AUTO_CREATE_TOPIC
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.transport import RemotingError
from pyrocketmq.service import Service, Services

from .broker_requests import BrokerRequests
from .client_id import default_instance_name, local_ip
from .errors import MQBrokerError, MQClientError, MQConnectionError, MQTimeoutError, NoMasterError
from .queue_offsets import QueueOffsets
from .request_errors import check_response, transport_error
from .route import (
    MASTER_ID,
    TopicPublishInfo,
    broker_addr_table,
    choose_broker_addr,
    limit_default_route,
    publish_info_from_route,
    subscribe_queues_from_route,
)
from .settings import ClientSettings, split_namesrv_addr

log = logging.getLogger("pyrocketmq.client")
SETTLE_SECONDS = 30.0
"""How long after a broker failed for a topic its route keeps being refreshed often."""
SETTLE_INTERVAL = 1.0


class ConsumerHooks(Protocol):
    """What a consumer registered on an instance provides (hooks beyond these are optional)."""

    group: str

    def consumer_data(self) -> ConsumerData: ...

    def topics(self) -> set[str]: ...


_instances: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[object, ...], ClientInstance]] = (
    weakref.WeakKeyDictionary()
)


def _complete(route: TopicRouteData) -> bool:
    """Every broker name holding the topic's queues has a master in the route (a name server that
    was stopped or cut off may list the queues of a broker whose addresses it has dropped)."""
    masters = {b.broker_name for b in route.broker_datas if MASTER_ID in b.broker_addrs}
    names = {q.broker_name for q in route.queue_datas}
    return bool(names) and names <= masters


class ClientInstance(QueueOffsets):
    """The runtime shared by the producers, consumers and admins of one name-server list.

    Most code gets one through :meth:`acquire` (inside a running loop) and gives it back with
    :meth:`release`; the last release shuts it down.

    Example::

        inst = ClientInstance.acquire(ClientSettings(namesrv_addr="127.0.0.1:9876"))
        await inst.start()
        route = await inst.fetch_route("TopicTest")
        await inst.release()
    """

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        self.namesrv_addrs = split_namesrv_addr(settings.namesrv_addr)
        if not self.namesrv_addrs:
            raise MQClientError(
                "no name server address given: pass namesrv_addr='host:port' (';' between several)"
            )
        self.client_ip = settings.client_ip or local_ip()
        self.instance_name = settings.instance_name or default_instance_name()
        self.client_id = f"{self.client_ip}@{self.instance_name}"
        sign = None
        if settings.access_key:
            sign = functools.partial(acl_sign, access_key=settings.access_key, secret_key=settings.secret_key,
                                     security_token=settings.security_token)
        self.remoting = RemotingClient(
            connect_timeout=settings.connect_timeout, ssl=settings.tls.context(), sign=sign
        )
        self.broker_requests = BrokerRequests(self)
        self.broker_requests.register(self.remoting)
        self.controller_leader: str | None = None
        """The controller instance that answered last as the leader (:mod:`.controller`)."""
        self.routes: dict[str, TopicRouteData] = {}
        self.publish_infos: dict[str, TopicPublishInfo] = {}
        self._failure_refresh: dict[str, float] = {}
        self._unsettled: dict[str, float] = {}
        """Topic → until when its route is refreshed every SETTLE_INTERVAL (a broker failed for it)."""
        """topic → monotonic time of its last route refresh after a failed request."""
        self.broker_addrs: dict[str, dict[int, str]] = {}
        self.broker_versions: dict[str, int] = {}
        self.producers: dict[str, Any] = {}
        self.consumers: dict[str, Any] = {}
        self._ns_index = 0
        self._services = Services()
        self._route_locks: dict[str, asyncio.Lock] = {}
        self._started = False
        self._closed = False
        self._refs = 0
        self._key: tuple[object, ...] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._new_broker_heartbeat: asyncio.Task[None] | None = None

    # -- sharing ----------------------------------------------------------------------------------
    @classmethod
    def acquire(cls, settings: ClientSettings) -> ClientInstance:
        """The instance for these name servers and instance name on the running loop (made if needed)."""
        loop = asyncio.get_running_loop()
        key = (tuple(split_namesrv_addr(settings.namesrv_addr)), settings.instance_name, settings.client_ip,
               settings.tls, settings.access_key, settings.secret_key)
        table = _instances.setdefault(loop, {})
        inst = table.get(key)
        if inst is None or inst._closed:
            inst = table[key] = cls(settings)
            inst._key = key
            inst._loop = loop
        inst._refs += 1
        return inst

    @classmethod
    async def join(
        cls, settings: ClientSettings, register: Callable[[ClientInstance], None]
    ) -> ClientInstance:
        """:meth:`acquire` the instance, ``register`` a group on it and start it; released again if
        either fails."""
        inst = cls.acquire(settings)
        try:
            register(inst)
            await inst.start()
        except BaseException:
            await inst.release()
            raise
        return inst

    async def release(self) -> None:
        """Give the instance back; the last holder shuts it down."""
        self._refs -= 1
        if self._refs <= 0:
            if self._loop is not None and self._key is not None:
                table = _instances.get(self._loop)
                if table is not None and table.get(self._key) is self:
                    del table[self._key]
            await self.shutdown()

    # -- lifecycle --------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the route-refresh and heartbeat loops (idempotent)."""
        if self._closed:
            raise MQClientError("this client instance was shut down; create a new producer/consumer")
        if self._started:
            return
        self._started = True
        self._services.add(Service(f"client {self.client_id}: route refresh", self.refresh_routes,
                                   lambda: self.settings.poll_namesrv_interval, logger=log))
        self._services.add(Service(f"client {self.client_id}: unsettled routes", self.refresh_unsettled,
                                   lambda: SETTLE_INTERVAL, logger=log))
        self._services.add(Service(f"client {self.client_id}: heartbeat", self.send_heartbeat_to_all,
                                   lambda: self.settings.heartbeat_interval, logger=log))
        self._services.start()

    async def shutdown(self) -> None:
        """Stop the loops, unregister every group from every broker, close the connections."""
        if self._closed:
            return
        self._closed = True
        await self._services.stop()
        if self._new_broker_heartbeat is not None:
            self._new_broker_heartbeat.cancel()
            await asyncio.gather(self._new_broker_heartbeat, return_exceptions=True)
        for group in list(self.producers):
            await self._unregister_everywhere(producer_group=group)
        for group in list(self.consumers):
            await self._unregister_everywhere(consumer_group=group)
        self.producers.clear()
        self.consumers.clear()
        await self.remoting.close()

    # -- groups -----------------------------------------------------------------------------------
    def register_producer(self, group: str, producer: Any) -> None:
        if group in self.producers and self.producers[group] is not producer:
            raise MQClientError(
                f"producer group {group!r} is already used by another producer of this client instance; "
                "use one producer per group, or set a distinct instance_name"
            )
        self.producers[group] = producer

    async def unregister_producer(self, group: str) -> None:
        if self.producers.pop(group, None) is not None and not self._closed:
            await self._unregister_everywhere(producer_group=group)

    def register_consumer(self, group: str, consumer: ConsumerHooks) -> None:
        if group in self.consumers and self.consumers[group] is not consumer:
            raise MQClientError(
                f"consumer group {group!r} is already used by another consumer of this client instance; "
                "use one consumer per group, or set a distinct instance_name"
            )
        self.consumers[group] = consumer

    async def unregister_consumer(self, group: str) -> None:
        if self.consumers.pop(group, None) is not None and not self._closed:
            await self._unregister_everywhere(consumer_group=group)

    # -- requests ---------------------------------------------------------------------------------
    async def invoke(
        self, addr: str, cmd: RemotingCommand, timeout: float | None = None, *, what: str = "broker",
        connect_timeout: float | None = None,
    ) -> RemotingCommand:
        """Send ``cmd`` to ``addr`` (a ``what``) and wait for the answer; transport failures become
        client errors. ``connect_timeout`` bounds a new connection's wait (at most
        ``settings.connect_timeout``)."""
        timeout = self.settings.request_timeout if timeout is None else timeout
        try:
            return await self.remoting.invoke(addr, cmd, timeout, connect_timeout)
        except RemotingError as e:
            raise transport_error(e, addr, what) from None

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        try:
            await self.remoting.invoke_oneway(addr, cmd)
        except RemotingError as e:
            raise transport_error(e, addr, "broker") from None

    async def invoke_namesrv(
        self, cmd: RemotingCommand, timeout: float | None = None
    ) -> tuple[RemotingCommand, str]:
        """Send ``cmd`` to a name server, failing over to the next on transport errors.

        Returns the answer and the address that gave it. When none answers, raises the error of
        the last one tried (a :class:`MQConnectionError` naming it).
        """
        n = len(self.namesrv_addrs)
        timeout = self.settings.request_timeout if timeout is None else timeout
        last: Exception | None = None
        for i in range(n):
            idx = (self._ns_index + i) % n
            addr = self.namesrv_addrs[idx]
            try:
                resp = await self.remoting.invoke(addr, cmd, timeout)
            except RemotingError as e:
                last = transport_error(e, addr, "name server")
            else:
                self._ns_index = idx
                return resp, addr
        assert last is not None
        raise last

    # -- routes -----------------------------------------------------------------------------------
    async def fetch_route(self, topic: str, timeout: float | None = None) -> TopicRouteData | None:
        """The topic's route from the name servers; None when they do not know the topic.

        A name server that does not know the topic, or routes one of its groups without a master,
        may be the one that was cut off (or stopped) while the master changed: the next one is asked
        then, and the first complete route wins (else the first answer)."""
        cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        first: TopicRouteData | None = None
        for attempt in range(len(self.namesrv_addrs)):
            if attempt:
                self._ns_index = (self._ns_index + 1) % len(self.namesrv_addrs)
            resp, addr = await self.invoke_namesrv(cmd, timeout)
            route = None
            if resp.code != ResponseCode.TOPIC_NOT_EXIST:
                check_response(resp, addr)
                route = TopicRouteData.from_json(resp.payload) if resp.body else None
            if route is not None and _complete(route):
                return route
            first = first or route
        return first

    async def update_route(
        self, topic: str, *, default_topic: str | None = None, default_queue_nums: int = 4
    ) -> bool:
        """Refresh ``topic``'s cached route; with ``default_topic``, use that topic's route in its place.

        Returns True when the topic (now) has a route. Name-server failures propagate; a topic the
        name servers do not know keeps its previous route (as the Java client does).
        """
        lock = self._route_locks.setdefault(topic, asyncio.Lock())
        async with lock:
            if default_topic:
                route = await self.fetch_route(default_topic)
                if route is not None:
                    route = limit_default_route(route, default_queue_nums)
            else:
                route = await self.fetch_route(topic)
            if route is None:
                return topic in self.routes
            self._store_route(topic, route)
            return True

    def _store_route(self, topic: str, route: TopicRouteData) -> None:
        self.routes[topic] = route
        known = {a for addrs in self.broker_addrs.values() for a in addrs.values()}
        self.broker_addrs.update(broker_addr_table([route]))
        if (self.producers or self.consumers) and self._started and not self._closed and any(
                a not in known for addrs in self.broker_addrs.values() for a in addrs.values()):
            self._heartbeat_new_brokers()
        if topic in self.publish_infos or self.producers:
            info = publish_info_from_route(topic, route)
            old = self.publish_infos.get(topic)
            if old is not None:
                info.counter = old.counter
            self.publish_infos[topic] = info
        for consumer in list(self.consumers.values()):
            hook = getattr(consumer, "on_route_changed", None)
            if hook is not None and topic in consumer.topics():
                hook(topic, subscribe_queues_from_route(topic, route))

    def _heartbeat_new_brokers(self) -> None:
        """A broker just learnt of hears this client's groups now, not at the next 30 s heartbeat
        (so its producer and consumer connections show at once)."""
        task = self._new_broker_heartbeat
        if task is None or task.done():
            self._new_broker_heartbeat = asyncio.get_running_loop().create_task(self.send_heartbeat_to_all())

    def topics_in_use(self) -> set[str]:
        topics = set(self.publish_infos)
        for consumer in self.consumers.values():
            topics |= set(consumer.topics())
        return topics

    async def refresh_routes(self) -> None:
        """Refresh the route of every topic in use (the 30 s timer)."""
        for topic in sorted(self.topics_in_use()):
            try:
                await self.update_route(topic)
            except (MQConnectionError, MQTimeoutError, MQBrokerError) as e:
                log.warning("client %s: route refresh of %s failed: %s", self.client_id, topic, e)

    async def refresh_unsettled(self) -> None:
        """Every SETTLE_INTERVAL: the routes of topics a broker failed for lately, so a broker that
        comes back at a new address (a pod replaced during a roll) is found before the 30 s timer, and
        before the next broker of the roll goes away."""
        now = time.monotonic()
        for topic, until in sorted(self._unsettled.items()):
            if until < now:
                del self._unsettled[topic]
                continue
            try:
                await self.update_route(topic)
            except (MQConnectionError, MQTimeoutError, MQBrokerError) as e:
                log.info("client %s: route refresh of unsettled %s: %s", self.client_id, topic, e)

    async def refresh_after_failure(self, topic: str) -> None:
        """A broker refused or dropped a request: refresh ``topic``'s route now (at most every 0.5 s per
        topic), so a master elected after a failover is found without waiting for the 30 s timer."""
        now = time.monotonic()
        self._unsettled[topic] = now + SETTLE_SECONDS
        if now - self._failure_refresh.get(topic, 0.0) < 0.5:
            return
        self._failure_refresh[topic] = now
        try:
            await self.update_route(topic)
        except (MQConnectionError, MQTimeoutError, MQBrokerError) as e:
            log.info("client %s: route refresh of %s after a failure: %s", self.client_id, topic, e)

    async def find_publish_info(
        self, topic: str, *, default_topic: str = AUTO_CREATE_TOPIC, default_queue_nums: int = 4
    ) -> TopicPublishInfo:
        """Where ``topic`` can be written; falls back to the default topic's route (auto-creation).

        The returned info may have no queues: the topic is unknown and no broker auto-creates topics.
        """
        info = self.publish_infos.get(topic)
        if info is None or not info.ok:
            self.publish_infos.setdefault(topic, TopicPublishInfo(topic))
            await self.update_route(topic)
            info = self.publish_infos.get(topic)
        if info is not None and info.ok:
            return info
        if default_topic and default_topic != topic:
            await self.update_route(topic, default_topic=default_topic, default_queue_nums=default_queue_nums)
        return self.publish_infos.get(topic) or TopicPublishInfo(topic)

    async def subscribe_queues(self, topic: str, *, refresh: bool = True) -> list[MessageQueue]:
        """The readable queues of ``topic`` (fetching its route first when ``refresh`` or unknown)."""
        if refresh or topic not in self.routes:
            found = await self.update_route(topic)
            if not found:
                raise MQBrokerError.for_code(
                    ResponseCode.TOPIC_NOT_EXIST,
                    f"no route for topic {topic}",
                    self.namesrv_addrs[self._ns_index],
                )
        return subscribe_queues_from_route(topic, self.routes[topic])

    # -- broker addresses -------------------------------------------------------------------------
    def master_addr(self, broker_name: str) -> str | None:
        found = choose_broker_addr(self.broker_addrs.get(broker_name), MASTER_ID, only_this=True)
        return found[0] if found else None

    def find_broker_addr(
        self, broker_name: str, broker_id: int = MASTER_ID, *, only_this: bool = False
    ) -> tuple[str, int] | None:
        """``(address, id)`` of a broker by name and id; any of that name unless ``only_this``."""
        return choose_broker_addr(self.broker_addrs.get(broker_name), broker_id, only_this=only_this)

    async def broker_addr_of(
        self, topic: str, broker_name: str, broker_id: int = MASTER_ID
    ) -> tuple[str, int]:
        """``(address, id)`` of broker ``broker_name`` (``broker_id`` if in the route, else another of that
        name), refreshing ``topic``'s route once when the name is not known."""
        found = self.find_broker_addr(broker_name, broker_id)
        if found is None:
            await self.update_route(topic)
            found = self.find_broker_addr(broker_name, broker_id)
        if found is None:
            raise MQClientError(
                f"broker {broker_name!r} is not in the route of topic {topic!r} (a new topic's route "
                "reaches the name servers a moment after its first message); retry, and check the broker runs"
            )
        return found

    async def master_addr_of(self, topic: str, broker_name: str) -> str:
        """The master's address, refreshing ``topic``'s route once when it is not known."""
        addr = self.master_addr(broker_name)
        if addr is None:
            await self.update_route(topic)
            addr = self.master_addr(broker_name)
        if addr is None:
            raise NoMasterError(
                f"broker {broker_name!r} has no master in the route of topic {topic!r}; is it running?"
            )
        return addr

    def all_broker_addrs(self, *, masters_only: bool = False) -> list[str]:
        out: list[str] = []
        for addrs in self.broker_addrs.values():
            for bid, addr in sorted(addrs.items()):
                if not masters_only or bid == MASTER_ID:
                    out.append(addr)
        return out

    # -- heartbeats -------------------------------------------------------------------------------
    def build_heartbeat(self) -> HeartbeatData:
        return HeartbeatData(
            client_id=self.client_id,
            producer_data_set=[ProducerData(group_name=g) for g in sorted(self.producers)],
            consumer_data_set=[c.consumer_data() for _, c in sorted(self.consumers.items())],
        )

    async def send_heartbeat_to_all(self) -> None:
        """Heartbeat every known broker (masters only when no consumer is registered)."""
        if not self.producers and not self.consumers:
            return
        body = self.build_heartbeat().to_json()
        addrs = self.all_broker_addrs(masters_only=not self.consumers)
        await asyncio.gather(*(self._heartbeat(addr, body) for addr in addrs))

    async def _heartbeat(self, addr: str, body: bytes) -> None:
        cmd = RemotingCommand.request(RequestCode.HEART_BEAT, body=body)
        try:
            resp = await self.invoke(addr, cmd)
            check_response(resp, addr)
            self.broker_versions[addr] = resp.version
        except (MQConnectionError, MQTimeoutError, MQBrokerError) as e:
            log.warning("client %s: heartbeat to %s failed: %s", self.client_id, addr, e)

    async def _unregister_everywhere(
        self, *, producer_group: str | None = None, consumer_group: str | None = None
    ) -> None:
        fields = {
            "clientID": self.client_id, "producerGroup": producer_group, "consumerGroup": consumer_group
        }

        async def one(addr: str) -> None:
            try:
                await self.invoke(addr, RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, fields), 1.0)
            except (MQConnectionError, MQTimeoutError) as e:
                log.debug("client %s: unregister from %s failed: %s", self.client_id, addr, e)

        await asyncio.gather(*(one(a) for a in self.all_broker_addrs()))
