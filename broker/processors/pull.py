"""PULL_MESSAGE (11), with long polling.

The response always carries ``suggestWhichBrokerId, nextBeginOffset, minOffset, maxOffset`` (a Java
client unboxes them). Found messages go out as the store's mapped-file slices, unjoined. A pull that
finds nothing and may be suspended is held until a matching message lands in its queue or the
consumer's suspend timeout passes, then answered with the original opaque.

Status mapping (PROTOCOL.md §7): empty queue → 19 at offset 0, else 21; below min → 21 (next = min);
at max → 19; past max → 21 (next = max); scanned but nothing matched → 20.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import HeaderError, PullMessageRequestHeader
from pyrocketmq.remoting.message import tags_code
from pyrocketmq.remoting.names import PERM_READ
from pyrocketmq.remoting.transport import Connection, HandlerRegistry, HandlerResult

from ..message_filter import SQL92, TAG, SqlParseError, not_supported, sql_record_filter
from ..settings import BrokerRole
from ..store.values import GetMessageStatus
from .services import BrokerServices

if TYPE_CHECKING:
    from ..long_poll import PullHoldService

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
FLAG_CLASS_FILTER = 0x8
FLAG_LITE_PULL = 0x10

_FOUND_CODES = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}


def parse_tag_expression(expression: str | None) -> frozenset[int] | None:
    """Tag codes of ``"TagA || TagB"``; ``None`` for ``*`` or no expression (everything matches)."""
    if expression is None:
        return None
    expression = expression.strip()
    if expression in ("", "*"):
        return None
    tags = [t.strip() for t in expression.split("||")]
    return frozenset(tags_code(t) for t in tags if t)


def tag_filter(codes: frozenset[int] | None) -> Callable[[int], bool] | None:
    if codes is None:
        return None
    return codes.__contains__


@dataclass(kw_only=True, eq=False, repr=False)
class PullProcessor(BrokerServices):
    holds: PullHoldService
    """Where a pull that found nothing waits for a message (long polling)."""

    def register(self, server: HandlerRegistry) -> None:
        server.register(RequestCode.PULL_MESSAGE, self.handle_pull)

    def handle_pull(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        return self._pull(conn, cmd, allow_suspend=True)

    def _pull(self, conn: Connection, cmd: RemotingCommand, allow_suspend: bool) -> HandlerResult:
        try:
            h = PullMessageRequestHeader.from_command(cmd)
        except HeaderError as e:
            return self._answer(cmd, ResponseCode.SYSTEM_ERROR, f"bad pull request header: {e}")
        group = self.groups.find(h.consumer_group)
        if group is None:
            return self._answer(cmd, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                f"subscription group [{h.consumer_group}] does not exist")
        if not group.consume_enable:
            remark = f"subscription group [{h.consumer_group}] does not have permission to consume"
            return self._answer(cmd, ResponseCode.NO_PERMISSION, remark)
        config = self.topics.get(h.topic)
        if config is None:
            return self._answer(cmd, ResponseCode.TOPIC_NOT_EXIST,
                                f"topic[{h.topic}] not exist, apply first please!")
        if not config.perm & PERM_READ:
            return self._answer(cmd, ResponseCode.NO_PERMISSION,
                                f"the topic[{h.topic}] pulling message is forbidden")
        if not 0 <= h.queue_id < config.read_queue_nums:
            remark = (f"queueId[{h.queue_id}] is illegal, topic:[{h.topic}] "
                      f"topicConfig.readQueueNums:[{config.read_queue_nums}] consumer:[{conn.remote_addr}]")
            return self._answer(cmd, ResponseCode.SYSTEM_ERROR, remark)
        sys_flag = h.sys_flag
        chosen = self._filters(cmd, h)
        if isinstance(chosen, RemotingCommand):
            return chosen
        codes, records = chosen
        matches = tag_filter(codes)
        pull = self.settings.pull
        max_nums = max(1, min(h.max_msg_nums, pull.max_transfer_count_hot))
        result = self.store.get_message(
            h.consumer_group, h.topic, h.queue_id, h.queue_offset, max_nums, None, matches, records
        )
        status = result.status
        if status in (GetMessageStatus.NO_MESSAGE_IN_QUEUE, GetMessageStatus.NO_MATCHED_LOGIC_QUEUE):
            code = ResponseCode.PULL_OFFSET_MOVED if h.queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
        else:
            code = _FOUND_CODES[status]
        suggest = 0
        if result.suggest_pull_from_slave and pull.slave_read_enable:
            suggest = group.which_broker_when_consume_slowly
        elif self.settings.identity.role == BrokerRole.SLAVE:
            suggest = 0
        if (
            sys_flag & FLAG_COMMIT_OFFSET
            and allow_suspend
            and self.settings.identity.role != BrokerRole.SLAVE
            and h.commit_offset is not None
            and h.commit_offset >= 0
        ):
            self.offsets.commit(h.consumer_group, h.topic, h.queue_id, h.commit_offset)
        if code == ResponseCode.PULL_NOT_FOUND and allow_suspend and sys_flag & FLAG_SUSPEND:
            timeout_ms = h.suspend_timeout_millis if pull.long_polling else pull.short_polling_time_ms
            if timeout_ms and timeout_ms > 0:
                return self._hold(conn, cmd, h.topic, h.queue_id, h.queue_offset, matches, timeout_ms / 1000)
        response = cmd.response(
            code,
            None if code == ResponseCode.SUCCESS else status.name,
            {
                "suggestWhichBrokerId": suggest,
                "nextBeginOffset": result.next_begin_offset,
                "minOffset": result.min_offset,
                "maxOffset": result.max_offset,
            },
        )
        if code == ResponseCode.SUCCESS:
            response.body = list(result.buffers)
            self.stats.on_get(h.topic, result.message_count, result.buffer_total_size, h.consumer_group)
            self.offsets.note_pull(h.consumer_group, h.topic, h.queue_id, result.next_begin_offset)
        return response

    def _filters(
        self, cmd: RemotingCommand, h: PullMessageRequestHeader
    ) -> tuple[frozenset[int] | None, Callable[[memoryview], bool] | None] | RemotingCommand:
        """(tag codes, record filter) of the pull's subscription — its own (FLAG_SUBSCRIPTION) or the
        one its group's heartbeat registered — or the refusal to answer with."""
        if h.sys_flag & FLAG_SUBSCRIPTION:
            expression_type, expression = h.expression_type or TAG, h.subscription or ""
            if expression_type == TAG:
                return parse_tag_expression(h.subscription), None
            parse_failed = (ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                            f"parse the consumer's subscription[{expression}] failed")
        else:
            info = self.consumers.find(h.consumer_group)
            if info is None:
                return self._answer(cmd, ResponseCode.SUBSCRIPTION_NOT_EXIST,
                                    f"the consumer's group info does not exist: {h.consumer_group}")
            sub = info.subscriptions.get(h.topic)
            if sub is None:
                return self._answer(cmd, ResponseCode.SUBSCRIPTION_NOT_EXIST,
                                    f"the consumer's subscription does not exist: {h.topic}")
            if h.sub_version is not None and sub.sub_version < h.sub_version:
                return self._answer(cmd, ResponseCode.SUBSCRIPTION_NOT_LATEST,
                                    "the consumer's subscription is not the latest")
            expression_type, expression = sub.expression_type or TAG, sub.sub_string
            if expression_type == TAG:
                return (None if expression in ("", "*") else frozenset(sub.code_set)), None
            parse_failed = (ResponseCode.FILTER_DATA_NOT_EXIST,
                            "The broker's consumer filter data is not exist!Your expression may be wrong!")
        if expression_type != SQL92 or not self.settings.pull.property_filter:
            return self._answer(cmd, ResponseCode.SYSTEM_ERROR, not_supported(expression_type))
        try:
            return None, sql_record_filter(expression)
        except SqlParseError as e:
            code, remark = parse_failed
            if code == ResponseCode.SUBSCRIPTION_PARSE_FAILED:
                remark = f"{remark}: {e}"
            return self._answer(cmd, code, remark)

    def _hold(
        self, conn: Connection, cmd: RemotingCommand, topic: str, queue_id: int, offset: int,
        matches: Callable[[int], bool] | None, timeout: float,
    ) -> Awaitable[RemotingCommand | None]:
        # Registered here, in the call that found nothing: the transport runs the coroutine returned
        # only in a later loop turn, and a message dispatched before then must still wake the pull.
        woken = self.holds.hold(topic, queue_id, offset, matches, timeout)
        return self._answer_when(conn, cmd, woken)

    async def _answer_when(
        self, conn: Connection, cmd: RemotingCommand, woken: Awaitable[bool]
    ) -> RemotingCommand | None:
        await woken
        if conn.closed:
            return None
        answer = self._pull(conn, cmd, allow_suspend=False)  # allow_suspend=False: never held again
        if answer is None or isinstance(answer, RemotingCommand):
            return answer
        return await answer

    def _answer(self, cmd: RemotingCommand, code: int, remark: str) -> RemotingCommand:
        return cmd.response(
            code,
            remark,
            {"suggestWhichBrokerId": 0, "nextBeginOffset": 0, "minOffset": 0, "maxOffset": 0},
        )
