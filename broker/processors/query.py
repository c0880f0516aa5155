"""QUERY_MESSAGE (12): messages by key through the store's index.

Used by ``MQAdminExt.queryMessage(topic, key, ...)`` and, with the ext field
``_UNIQUE_KEY_QUERY=true``, by ``viewMessage``/``queryMessageByUniqKey`` (the key is then a
UNIQ_KEY and ``maxNum`` is the broker's ``defaultQueryMaxNum``, whatever the client sent: Java does
the same). The response header ``indexLastUpdateTimestamp, indexLastUpdatePhyoffset`` is always
there (a Java client unboxes it); the body is the matching stored records, concatenated, ascending
commitlog offsets. None found → QUERY_NOT_FOUND (22). The client queries every broker of the topic
and checks keys itself; the store has already dropped hash collisions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import HeaderError, QueryMessageRequestHeader, QueryMessageResponseHeader
from pyrocketmq.remoting.transport import Connection, HandlerRegistry, HandlerResult

if TYPE_CHECKING:
    from ..store.message_store import MessageStore


UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"
"""Java ``MixAll.UNIQUE_MSG_QUERY_FLAG``."""
NOT_FOUND_REMARK = "can not find message, maybe time range not correct"


class QueryProcessor:
    def __init__(self, *, store: MessageStore) -> None:
        self.store = store

    def register(self, server: HandlerRegistry) -> None:
        server.register(RequestCode.QUERY_MESSAGE, self.handle_query_message)

    def handle_query_message(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        empty = QueryMessageResponseHeader(0, 0).to_ext()
        try:
            h = QueryMessageRequestHeader.from_command(cmd)
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"bad query message header: {e}", empty)
        store = self.store
        max_num = h.max_num
        if cmd.ext_fields.get(UNIQUE_KEY_QUERY) == "true":  # Java compares with equals("true")
            max_num = store.settings.index.default_query_max_num
        result = store.query_message(h.topic, h.key, max_num, h.begin_timestamp, h.end_timestamp)
        header = QueryMessageResponseHeader(
            index_last_update_timestamp=result.index_last_update_timestamp,
            index_last_update_phyoffset=result.index_last_update_phyoffset,
        ).to_ext()
        if not result.buffers:
            return cmd.response(ResponseCode.QUERY_NOT_FOUND, NOT_FOUND_REMARK, header)
        response = cmd.response(ResponseCode.SUCCESS, None, header)
        response.body = list(result.buffers)
        return response
