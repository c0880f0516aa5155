"""Consumer offsets and queue offsets: codes 14, 15, 29, 30, 31, 32."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import (
    GetEarliestMsgStoretimeRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    Header,
    HeaderError,
    QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from pyrocketmq.remoting.names import check_group_name
from pyrocketmq.remoting.transport import Connection, HandlerRegistry, HandlerResult

if TYPE_CHECKING:
    from ..consumer_offset import ConsumerOffsetManager
    from ..store.message_store import MessageStore
    from ..topic_config import TopicConfigManager


class _BadRequest(ValueError):
    pass


def _header(cls: type[_H], cmd: RemotingCommand) -> _H:
    try:
        h = cls.from_command(cmd)
    except HeaderError as e:
        raise _BadRequest(str(e)) from None
    queue_id = getattr(h, "queue_id", 0)
    if queue_id < 0:
        raise _BadRequest(f"the request header field 'queueId' is negative: {queue_id}")
    return h


_H = TypeVar("_H", bound=Header)
_Self = TypeVar("_Self")
_Method = Callable[[_Self, Connection, RemotingCommand], HandlerResult]


def _guarded(fn: _Method[_Self]) -> _Method[_Self]:
    def handler(self: _Self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        try:
            return fn(self, conn, cmd)
        except _BadRequest as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e), {"offset": -1})

    handler.__name__ = fn.__name__
    return handler


class OffsetProcessor:
    def __init__(
        self, *, offsets: ConsumerOffsetManager, store: MessageStore, topics: TopicConfigManager
    ) -> None:
        self.offsets = offsets
        self.store = store
        self.topics = topics

    def register(self, server: HandlerRegistry) -> None:
        server.register(RequestCode.QUERY_CONSUMER_OFFSET, self.handle_query_consumer_offset)
        server.register(RequestCode.UPDATE_CONSUMER_OFFSET, self.handle_update_consumer_offset)
        server.register(RequestCode.GET_MAX_OFFSET, self.handle_max_offset)
        server.register(RequestCode.GET_MIN_OFFSET, self.handle_min_offset)
        server.register(RequestCode.GET_EARLIEST_MSG_STORETIME, self.handle_earliest_time)
        server.register(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, self.handle_search_by_time)

    @_guarded
    def handle_query_consumer_offset(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        q = _header(QueryConsumerOffsetRequestHeader, cmd)
        group, topic, qid = q.consumer_group, q.topic, q.queue_id
        offset = self.offsets.query(group, topic, qid)
        if offset >= 0:
            return cmd.response(ResponseCode.SUCCESS, None, {"offset": offset})
        # Nothing committed: a queue whose first message is still here starts at 0 (Java does the same
        # when the min offset is 0 and the data is in memory); otherwise the client decides.
        if self.store.get_min_offset_in_queue(topic, qid) <= 0:
            return cmd.response(ResponseCode.SUCCESS, None, {"offset": 0})
        return cmd.response(
            ResponseCode.QUERY_NOT_FOUND, "Not found, maybe this group consumer boot first", {"offset": -1}
        )

    @_guarded
    def handle_update_consumer_offset(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        h = _header(UpdateConsumerOffsetRequestHeader, cmd)
        problem = check_group_name(h.consumer_group)
        if problem is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, problem)
        config = self.topics.get(h.topic)
        if config is None:
            return cmd.response(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist, apply first please!"
            )
        queues = max(config.read_queue_nums, config.write_queue_nums)
        if h.queue_id >= queues:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{h.queue_id}] is illegal, topic:[{h.topic}] has {queues} queues",
            )
        if h.commit_offset < 0:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"commitOffset[{h.commit_offset}] is negative")
        self.offsets.commit(h.consumer_group, h.topic, h.queue_id, h.commit_offset)
        return cmd.response(ResponseCode.SUCCESS)

    @_guarded
    def handle_max_offset(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        h = _header(GetMaxOffsetRequestHeader, cmd)
        offset = self.store.get_max_offset_in_queue(h.topic, h.queue_id)
        return cmd.response(ResponseCode.SUCCESS, None, {"offset": offset})

    @_guarded
    def handle_min_offset(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        h = _header(GetMinOffsetRequestHeader, cmd)
        offset = self.store.get_min_offset_in_queue(h.topic, h.queue_id)
        return cmd.response(ResponseCode.SUCCESS, None, {"offset": offset})

    @_guarded
    def handle_earliest_time(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        h = _header(GetEarliestMsgStoretimeRequestHeader, cmd)
        ts = self.store.get_earliest_message_time(h.topic, h.queue_id)
        return cmd.response(ResponseCode.SUCCESS, None, {"timestamp": ts})

    @_guarded
    def handle_search_by_time(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        h = _header(SearchOffsetRequestHeader, cmd)
        offset = self.store.get_offset_by_time(h.topic, h.queue_id, h.timestamp)
        return cmd.response(ResponseCode.SUCCESS, None, {"offset": offset})
