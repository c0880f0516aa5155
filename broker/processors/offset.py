"""Consumer offsets and queue offsets: codes 14, 15, 29, 30, 31, 32."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.transport import Connection, HandlerRegistry, HandlerResult

if TYPE_CHECKING:
    from ..consumer_offset import ConsumerOffsetManager
    from ..store.message_store import MessageStore


class _BadRequest(ValueError):
    pass


def _need_str(cmd: RemotingCommand, key: str) -> str:
    v = cmd.ext_fields.get(key)
    if v is None or v == "":
        raise _BadRequest(f"the request header field {key!r} is missing")
    return v


def _need_int(cmd: RemotingCommand, key: str) -> int:
    v = _need_str(cmd, key)
    try:
        return int(v)
    except ValueError:
        raise _BadRequest(f"the request header field {key!r} is not an integer: {v!r}") from None


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
    def __init__(self, *, offsets: ConsumerOffsetManager, store: MessageStore) -> None:
        self.offsets = offsets
        self.store = store

    def register(self, server: HandlerRegistry) -> None:
        server.register(RequestCode.QUERY_CONSUMER_OFFSET, self.handle_query_consumer_offset)
        server.register(RequestCode.UPDATE_CONSUMER_OFFSET, self.handle_update_consumer_offset)
        server.register(RequestCode.GET_MAX_OFFSET, self.handle_max_offset)
        server.register(RequestCode.GET_MIN_OFFSET, self.handle_min_offset)
        server.register(RequestCode.GET_EARLIEST_MSG_STORETIME, self.handle_earliest_time)
        server.register(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, self.handle_search_by_time)

    @_guarded
    def handle_query_consumer_offset(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        group, topic, qid = _need_str(cmd, "consumerGroup"), _need_str(cmd, "topic"), _need_int(cmd, "queueId")
        offset = self.offsets.query(group, topic, qid)
        if offset >= 0:
            return cmd.response(ResponseCode.SUCCESS, None, {"offset": offset})
        # Nothing committed: a queue whose first message is still here starts at 0 (Java does the same
        # when the min offset is 0 and the data is in memory); otherwise the client decides.
        if self.store.get_min_offset_in_queue(topic, qid) <= 0:
            return cmd.response(ResponseCode.SUCCESS, None, {"offset": 0})
        return cmd.response(ResponseCode.QUERY_NOT_FOUND, "Not found, maybe this group consumer boot first", {"offset": -1})

    @_guarded
    def handle_update_consumer_offset(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        group, topic, qid = _need_str(cmd, "consumerGroup"), _need_str(cmd, "topic"), _need_int(cmd, "queueId")
        offset = _need_int(cmd, "commitOffset")
        self.offsets.commit(group, topic, qid, offset)
        return cmd.response(ResponseCode.SUCCESS)

    @_guarded
    def handle_max_offset(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        offset = self.store.get_max_offset_in_queue(_need_str(cmd, "topic"), _need_int(cmd, "queueId"))
        return cmd.response(ResponseCode.SUCCESS, None, {"offset": offset})

    @_guarded
    def handle_min_offset(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        offset = self.store.get_min_offset_in_queue(_need_str(cmd, "topic"), _need_int(cmd, "queueId"))
        return cmd.response(ResponseCode.SUCCESS, None, {"offset": offset})

    @_guarded
    def handle_earliest_time(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        ts = self.store.get_earliest_message_time(_need_str(cmd, "topic"), _need_int(cmd, "queueId"))
        return cmd.response(ResponseCode.SUCCESS, None, {"timestamp": ts})

    @_guarded
    def handle_search_by_time(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        offset = self.store.get_offset_by_time(
            _need_str(cmd, "topic"), _need_int(cmd, "queueId"), _need_int(cmd, "timestamp")
        )
        return cmd.response(ResponseCode.SUCCESS, None, {"offset": offset})
