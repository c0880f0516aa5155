"""RECALL_MESSAGE (370, Apache RocketMQ 5.3.2+): take a timer message back before it is due.

The request names the topic and the handle the message's send returned
(:mod:`pyrocketmq.remoting.recall_handle`); the 5.x endpoint's RecallMessage comes here too. The
checks are Apache ``RecallMessageProcessor``'s, in its order, with its answers
(:func:`judge_recall`, pure):

=================================  ===================  ==============================================
recall off (``recallMessageEnable``) NO_PERMISSION      recall failed, operation is forbidden
a slave                            SLAVE_NOT_AVAILABLE  recall failed, broker service not available
no such topic                      TOPIC_NOT_EXIST      recall failed, the topic[<topic>] not exist
a handle that does not read        ILLEGAL_OPERATION    recall handle is invalid
a handle of another topic          ILLEGAL_OPERATION    recall failed, topic not match
a handle of another broker         ILLEGAL_OPERATION    recall failed, broker service not available
due already, or further ahead      ILLEGAL_OPERATION    recall failed, timestamp invalid
than ``timerMaxDelaySec``
=================================  ===================  ==============================================

Then a recall marker goes into the store (:func:`~..timer_recall.recall_marker`), which the timer
service reads before it delivers anything (:mod:`~..timer_service`), and the answer is SUCCESS with
the message id (``msgId``). As in Apache, the marker is not checked against what is stored: a recall
of a message that is not there, or is recalled already, succeeds and takes nothing back. With the
timer off (``timerWheelEnable=false``), or a put that fails, the answer is Apache's SYSTEM_ERROR
"recall failed, execute error".

One difference: Apache takes a recall up to the due millisecond itself; here a message due this very
millisecond counts as due (the timer may have delivered it already), so a recall answered SUCCESS has
always kept its message from being delivered.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import HeaderError, RecallMessageRequestHeader
from pyrocketmq.remoting.recall_handle import RecallHandle, RecallHandleError, decode_recall_handle
from pyrocketmq.remoting.transport import Connection, HandlerRegistry

from ..settings import BrokerRole
from ..store.values import PutMessageStatus
from ..timer_recall import recall_marker

if TYPE_CHECKING:
    from ..settings import BrokerSettings
    from ..store.message_store import MessageStore
    from ..topic_config import TopicConfigManager

Refusal = tuple[ResponseCode, str]
STORED = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)
"""Put outcomes that leave the marker stored: the recall is answered SUCCESS (Apache's)."""
NOT_AVAILABLE = "recall failed, broker service not available"
EXECUTE_ERROR = "recall failed, execute error"


def judge_recall(
    h: RecallMessageRequestHeader,
    *,
    enabled: bool,
    slave: bool,
    topic_known: bool,
    broker_name: str,
    now_ms: int,
    max_delay_s: int,
) -> RecallHandle | Refusal:
    """The handle to recall by, or the refusal (see the module docstring)."""
    if not enabled:
        return ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden"
    if slave:
        return ResponseCode.SLAVE_NOT_AVAILABLE, NOT_AVAILABLE
    if not topic_known:
        return ResponseCode.TOPIC_NOT_EXIST, f"recall failed, the topic[{h.topic[:255]}] not exist"
    try:
        handle = decode_recall_handle(h.recall_handle)
    except RecallHandleError as e:
        return ResponseCode.ILLEGAL_OPERATION, str(e)
    if handle.topic != h.topic:
        return ResponseCode.ILLEGAL_OPERATION, "recall failed, topic not match"
    if handle.broker_name != broker_name:
        return ResponseCode.ILLEGAL_OPERATION, NOT_AVAILABLE
    due = handle.due_ms
    if due is None or due <= now_ms or due + 1 - now_ms >= max_delay_s * 1000:
        return ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid"
    return handle


@dataclass(kw_only=True, eq=False, repr=False)
class RecallProcessor:
    settings: BrokerSettings
    topics: TopicConfigManager
    store: MessageStore

    def register(self, server: HandlerRegistry) -> None:
        server.register(RequestCode.RECALL_MESSAGE, self.handle_recall)

    def handle_recall(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        try:
            h = RecallMessageRequestHeader.from_command(cmd)
        except HeaderError as e:
            return self._answer(cmd, ResponseCode.SYSTEM_ERROR, f"bad recall request header: {e}")
        now, s = int(time.time() * 1000), self.settings
        judged = judge_recall(
            h,
            enabled=s.store.recall_message_enable,
            slave=s.identity.role == BrokerRole.SLAVE,
            topic_known=self.topics.get(h.topic) is not None,
            broker_name=s.identity.broker_name,
            now_ms=now,
            max_delay_s=s.store.timer_max_delay_sec,
        )
        if isinstance(judged, tuple):
            return self._answer(cmd, *judged)
        due = judged.due_ms
        if not s.store.timer_wheel_enable or due is None:
            return self._answer(cmd, ResponseCode.SYSTEM_ERROR, EXECUTE_ERROR)
        marker = recall_marker(h.topic, judged.message_id, due, producer_group=h.producer_group, now_ms=now)
        if self.store.put_message(marker).status not in STORED:
            return self._answer(cmd, ResponseCode.SYSTEM_ERROR, EXECUTE_ERROR)
        response = self._answer(cmd, ResponseCode.SUCCESS, None)
        response.ext_fields["msgId"] = judged.message_id
        return response

    @staticmethod
    def _answer(cmd: RemotingCommand, code: ResponseCode, remark: str | None) -> RemotingCommand:
        response = cmd.response(code, remark)
        response.ext_fields = {"MSG_REGION": "DefaultRegion"}  # Apache adds it to every recall answer
        return response
