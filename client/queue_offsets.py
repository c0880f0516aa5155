"""Queue offsets on the brokers, shared by the consumers and the admin: a queue's min and max
offset, the offset found by time, its earliest store time, a topic's offsets in one request per
master, and a group's committed offset (read and write).

Each request goes to the master of the queue's broker, found in the client instance's route cache
(refreshed once when the broker is not known yet). :class:`QueueOffsets` is a part of
:class:`~.instance.ClientInstance` (``inst.max_offset(mq)``); it uses only the instance's routes
and requests (:class:`_Instance`).
"""

from __future__ import annotations

from typing import Any, Protocol

from pyrocketmq.remoting.body import MessageQueue, TopicRouteData, TopicStatsTable
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand

from .request_errors import check_response


class _Instance(Protocol):
    """What the offset requests need of the client instance."""

    routes: dict[str, TopicRouteData]

    def master_addr(self, broker_name: str) -> str | None: ...

    async def master_addr_of(self, topic: str, broker_name: str) -> str: ...

    async def update_route(self, topic: str) -> bool: ...

    async def invoke(self, addr: str, cmd: RemotingCommand) -> RemotingCommand: ...

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None: ...


async def _queue_request(
    inst: _Instance, code: int, mq: MessageQueue, extra: dict[str, Any] | None = None
) -> RemotingCommand:
    """``code`` about ``mq`` (its topic and queue id, and ``extra``) to its master; the answer."""
    addr = await inst.master_addr_of(mq.topic, mq.broker_name)
    fields: dict[str, Any] = {"topic": mq.topic, "queueId": mq.queue_id}
    if extra:
        fields.update(extra)
    resp = await inst.invoke(addr, RemotingCommand.request(code, fields))
    return check_response(resp, addr)


class QueueOffsets:
    """The offset requests of a client instance (see the module docstring)."""

    async def max_offset(self: _Instance, mq: MessageQueue) -> int:
        """The queue's max offset (one past its last message) on the master."""
        resp = await _queue_request(self, RequestCode.GET_MAX_OFFSET, mq)
        return resp.get_int("offset", 0) or 0

    async def min_offset(self: _Instance, mq: MessageQueue) -> int:
        """The queue's min offset (its first message still stored) on the master."""
        resp = await _queue_request(self, RequestCode.GET_MIN_OFFSET, mq)
        return resp.get_int("offset", 0) or 0

    async def search_offset(self: _Instance, mq: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the message stored closest to ``timestamp_ms`` (ms since the epoch)."""
        extra = {"timestamp": timestamp_ms}
        resp = await _queue_request(self, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, mq, extra)
        return resp.get_int("offset", 0) or 0

    async def queue_offsets(self: _Instance, topic: str) -> dict[MessageQueue, tuple[int, int]]:
        """``{queue: (min offset, max offset)}`` of ``topic``: one topic-stats request per master
        of its route (GET_TOPIC_STATS_INFO), not two requests per queue."""
        route = self.routes.get(topic)
        if route is None:
            await self.update_route(topic)
            route = self.routes.get(topic)
        out: dict[MessageQueue, tuple[int, int]] = {}
        for bd in route.broker_datas if route is not None else ():
            addr = self.master_addr(bd.broker_name)
            if addr is None:
                continue
            cmd = RemotingCommand.request(RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic})
            resp = check_response(await self.invoke(addr, cmd), addr)
            for mq, v in TopicStatsTable.from_json(resp.payload or b"{}").offset_table.items():
                out[mq] = (v.min_offset, v.max_offset)
        return out

    async def earliest_store_time(self: _Instance, mq: MessageQueue) -> int:
        """When the queue's first message still stored was stored (ms since the epoch)."""
        resp = await _queue_request(self, RequestCode.GET_EARLIEST_MSG_STORETIME, mq)
        return resp.get_int("timestamp", 0) or 0

    async def query_consumer_offset(self: _Instance, group: str, mq: MessageQueue) -> int:
        """The group's committed offset of ``mq`` on the master; -1 when none is stored."""
        addr = await self.master_addr_of(mq.topic, mq.broker_name)
        fields = {"consumerGroup": group, "topic": mq.topic, "queueId": mq.queue_id}
        resp = await self.invoke(addr, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, fields))
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return -1
        check_response(resp, addr)
        offset = resp.get_int("offset")
        return -1 if offset is None else offset

    async def update_consumer_offset(
        self: _Instance, group: str, mq: MessageQueue, offset: int, *, oneway: bool = False
    ) -> None:
        """Store the group's offset of ``mq`` on the master (the next offset to consume)."""
        addr = await self.master_addr_of(mq.topic, mq.broker_name)
        fields = {"consumerGroup": group, "topic": mq.topic, "queueId": mq.queue_id, "commitOffset": offset}
        cmd = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, fields, oneway=oneway)
        if oneway:
            await self.invoke_oneway(addr, cmd)
        else:
            check_response(await self.invoke(addr, cmd), addr)
