"""The offset family of admin requests: a queue's min, max and by-time offsets, a group's
committed offset, and mqadmin's ``resetOffsetByTime`` (:meth:`AdminOffsets.reset_offset_by_time`).

The per-queue requests are the client instance's (:mod:`.queue_offsets`); a reset asks every
master of the topic (INVOKE_BROKER_TO_RESET_OFFSET, 222), and stores the offsets itself, queue by
queue, on a broker where no consumer of the group is online.
"""

from __future__ import annotations

from pyrocketmq.remoting.body import MessageQueue, ResetOffsetBody, TopicRouteData
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand

from .admin_base import AdminBase, master_of
from .request_errors import check_response


class AdminOffsets(AdminBase):
    """The offset requests of :class:`~.admin.Admin` (see the module docstring)."""

    async def max_offset(self, mq: MessageQueue) -> int:
        return await self.instance.max_offset(mq)

    async def min_offset(self, mq: MessageQueue) -> int:
        return await self.instance.min_offset(mq)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return await self.instance.search_offset(mq, timestamp_ms)

    async def update_consumer_offset(self, group: str, mq: MessageQueue, offset: int) -> None:
        await self.instance.update_consumer_offset(group, mq, offset)

    async def reset_offset_by_time(
        self, group: str, topic: str, timestamp_ms: int, *, force: bool = True
    ) -> dict[MessageQueue, int]:
        """Rewind (or fast-forward) ``group`` on ``topic`` to ``timestamp_ms`` (-1: the end), as
        mqadmin ``resetOffsetByTime`` does: INVOKE_BROKER_TO_RESET_OFFSET (222) to every master of
        the topic, which tells the online consumers (220) and stores the offsets. A broker with no
        consumer of the group online (206) gets the offsets stored directly, queue by queue
        (UPDATE_CONSUMER_OFFSET with the offset found by time). Without ``force`` a queue whose
        committed offset is already before the target keeps it. Returns the offset per queue.
        """
        route = await self.topic_route(topic)
        fields = {"topic": topic, "group": group, "timestamp": timestamp_ms, "isForce": force}
        table: dict[MessageQueue, int] = {}
        for bd in route.broker_datas:
            addr = master_of(bd)
            if addr is None:
                continue
            cmd = RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, fields)
            resp = await self.instance.invoke(addr, cmd)
            if resp.code == ResponseCode.CONSUMER_NOT_ONLINE:
                offline = await self._reset_offline(group, topic, bd.broker_name, timestamp_ms, force, route)
                table.update(offline)
                continue
            check_response(resp, addr)
            table.update(ResetOffsetBody.from_json(resp.payload or b"{}").offset_table)
        return dict(sorted(table.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id)))

    async def _reset_offline(self, group: str, topic: str, broker_name: str, timestamp_ms: int, force: bool,
                             route: TopicRouteData) -> dict[MessageQueue, int]:
        queues = next((q for q in route.queue_datas if q.broker_name == broker_name), None)
        out: dict[MessageQueue, int] = {}
        for qid in range(queues.read_queue_nums if queues is not None else 0):
            mq = MessageQueue(topic, broker_name, qid)
            if timestamp_ms == -1:
                target = await self.instance.max_offset(mq)
            else:
                target = await self.instance.search_offset(mq, timestamp_ms)
            committed = await self.instance.query_consumer_offset(group, mq)
            if not force and 0 <= committed <= target:
                out[mq] = committed
                continue
            await self.instance.update_consumer_offset(group, mq, target)
            out[mq] = target
        return out
