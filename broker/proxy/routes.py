"""Topic routes for 5.x clients: the name servers' route, each master given its gRPC endpoint.

A broker announces its gRPC port to the name servers as a KV config entry (namespace
``PYROCKETMQ_GRPC``, key = its remoting address, value = ``host:port``), which RocketMQ's name server
keeps too. A broker whose entry is missing is assumed to serve gRPC on the same port as this one
(what RocketMQ's proxy assumes of every broker in local mode).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from pyrocketmq.remoting.body import MASTER_ID, TopicRouteData
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.transport import RemotingError

from .convert import QueueSpan

log = logging.getLogger("pyrocketmq.broker.proxy")

KV_NAMESPACE = "PYROCKETMQ_GRPC"
ROUTE_TTL = 3.0
"""Seconds a route read from the name servers is reused (clients ask every 30 s and on failures)."""
TIMEOUT = 3.0


class RouteUnavailable(Exception):
    """No name server answered."""


class RouteLookup:
    def __init__(self, client: RemotingClient, namesrv_addrs: Sequence[str], grpc_port: int) -> None:
        self.client = client
        self.namesrv_addrs = tuple(namesrv_addrs)
        self.grpc_port = grpc_port
        self._routes: dict[str, tuple[float, list[QueueSpan] | None]] = {}
        self._endpoints: dict[str, tuple[float, str | None]] = {}

    async def _ask(self, code: int, fields: dict[str, str]) -> RemotingCommand:
        last: Exception | None = None
        for addr in self.namesrv_addrs:
            try:
                return await self.client.invoke(addr, RemotingCommand.request(code, fields), TIMEOUT)
            except RemotingError as e:
                last = e
        raise RouteUnavailable(
            f"no name server answered ({last})" if last else "no name server is configured"
        )

    async def spans(self, topic: str) -> list[QueueSpan] | None:
        """The topic's queues by broker with gRPC endpoints; None when no name server knows it."""
        now = time.monotonic()
        cached = self._routes.get(topic)
        if cached is not None and now - cached[0] < ROUTE_TTL:
            return cached[1]
        resp = await self._ask(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        if resp.code == ResponseCode.TOPIC_NOT_EXIST or (resp.code == ResponseCode.SUCCESS and not resp.body):
            spans = None
        elif resp.code != ResponseCode.SUCCESS:
            raise RouteUnavailable(f"the name server refused the route of {topic}: {resp.code} {resp.remark}")
        else:
            spans = await self._spans(TopicRouteData.from_json(resp.payload)) or None
        if len(self._routes) > 10_000:
            self._routes.clear()
        self._routes[topic] = (now, spans)
        return spans

    async def _spans(self, route: TopicRouteData) -> list[QueueSpan]:
        masters = {b.broker_name: b.broker_addrs.get(MASTER_ID) for b in route.broker_datas}
        out = []
        for q in route.queue_datas:
            addr = masters.get(q.broker_name)
            if not addr:
                continue  # no master: not writable, and 5.x clients read from masters
            host, port = await self.endpoint(addr)
            out.append(QueueSpan(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, host, port))
        return out

    async def master_of(self, topic: str, broker_name: str) -> str | None:
        """The remoting address of the master of ``broker_name`` that ``topic``'s route names, or None
        (not asked from the cache: the recalls that need it are few)."""
        resp = await self._ask(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        if resp.code != ResponseCode.SUCCESS or not resp.body:
            return None
        masters = (
            b.broker_addrs.get(MASTER_ID)
            for b in TopicRouteData.from_json(resp.payload).broker_datas
            if b.broker_name == broker_name
        )
        return next((addr for addr in masters if addr), None)

    async def endpoint(self, broker_addr: str) -> tuple[str, int]:
        """The gRPC ``(host, port)`` of the broker at remoting address ``broker_addr``."""
        now = time.monotonic()
        cached = self._endpoints.get(broker_addr)
        if cached is None or now - cached[0] >= 30.0:
            value: str | None = None
            try:
                resp = await self._ask(
                    RequestCode.GET_KV_CONFIG, {"namespace": KV_NAMESPACE, "key": broker_addr}
                )
                if resp.code == ResponseCode.SUCCESS:
                    value = resp.ext_fields.get("value")
            except RouteUnavailable as e:
                log.info("gRPC endpoint of %s not known: %s", broker_addr, e)
            cached = (now, value)
            self._endpoints[broker_addr] = cached
        value = cached[1]
        if value:
            host, _, port = value.rpartition(":")
            if host and port.isdigit():
                return host, int(port)
        return broker_addr.rpartition(":")[0], self.grpc_port

    async def announce(self, broker_addr: str, grpc_addr: str) -> int:
        """Tell every name server this broker's gRPC endpoint; how many took it."""
        n = 0
        for addr in self.namesrv_addrs:
            fields = {"namespace": KV_NAMESPACE, "key": broker_addr, "value": grpc_addr}
            try:
                resp = await self.client.invoke(
                    addr, RemotingCommand.request(RequestCode.PUT_KV_CONFIG, fields), TIMEOUT
                )
            except RemotingError as e:
                log.info("announcing the gRPC endpoint to %s failed: %s", addr, e)
                continue
            n += resp.code == ResponseCode.SUCCESS
        self._endpoints[broker_addr] = (time.monotonic(), grpc_addr)
        return n

    async def withdraw(self, broker_addr: str) -> None:
        for addr in self.namesrv_addrs:
            fields = {"namespace": KV_NAMESPACE, "key": broker_addr}
            try:
                await asyncio.wait_for(
                    self.client.invoke(
                        addr, RemotingCommand.request(RequestCode.DELETE_KV_CONFIG, fields), TIMEOUT
                    ),
                    TIMEOUT,
                )
            except (RemotingError, TimeoutError) as e:
                log.info("withdrawing the gRPC endpoint from %s failed: %s", addr, e)
