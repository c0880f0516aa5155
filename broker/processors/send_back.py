"""CONSUMER_SEND_MSG_BACK (36): a message a consumer failed goes to its group's retry topic or DLQ.

The original is looked up by the commitlog offset in the header (the consumer's copy is not trusted
nor sent). Where it goes is :func:`~..delay.decide_send_back` (``%RETRY%<group>`` through a delay
level, or ``%DLQ%<group>`` once ``reconsumeTimes >= maxReconsumeTimes`` — the header's, else the
group's ``retryMaxTimes``); what is stored is :func:`~..delay.send_back_inner`. Both topics are
created here on first use (retry: the group's ``retryQueueNums`` queues, DLQ: one; perm 6); a group
whose ``%RETRY%`` name cannot be a topic (a legal group of 121-255 characters makes one over 127)
gets Apache's answer to a topic it could not create, SYSTEM_ERROR ``topic[...] not exist``, with the
reason. With the ACL on, the account needs SUB on the original's topic, asked once it is found: the
offset could name any message, whose body would then come back to the group in its retry topic.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pyrocketmq.remoting.body import TopicConfig
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import ConsumerSendMsgBackRequestHeader, HeaderError
from pyrocketmq.remoting.log_limit import RateLimitedLog
from pyrocketmq.remoting.names import (
    MAX_TOPIC_LENGTH,
    PERM_READ,
    PERM_WRITE,
    RETRY_GROUP_TOPIC_PREFIX,
    dlq_topic,
    retry_topic,
)
from pyrocketmq.remoting.transport import Connection, HandlerRegistry, HandlerResult
from pyrocketmq.server.acl_service import acl_refusal
from pyrocketmq.server.acl_table import stored_needs
from pyrocketmq.server.config_checks import ConfigRefused

from ..delay import DLQ_QUEUE_NUMS, decide_send_back, send_back_inner
from ..settings import BrokerRole
from ..store.values import PutMessageStatus
from .send import published_first
from .services import BrokerServices

log = logging.getLogger("pyrocketmq.broker")
_refusals = RateLimitedLog(log)


@dataclass(kw_only=True, eq=False, repr=False)
class SendBackProcessor(BrokerServices):
    publish_routes: Callable[[], Awaitable[object]] | None = None
    """Registers this broker's topics with the name servers now (after a new retry or DLQ topic)."""

    def register(self, server: HandlerRegistry) -> None:
        server.register(RequestCode.CONSUMER_SEND_MSG_BACK, self.handle_send_back)

    def handle_send_back(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        version = self.topics.data_version.counter
        answer = self._send_back(conn, cmd)
        if self.publish_routes is not None and self.topics.data_version.counter != version:
            return published_first(self.publish_routes, answer)  # a new %RETRY%/%DLQ% topic: routed first
        return answer

    def _send_back(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        try:
            h = ConsumerSendMsgBackRequestHeader.from_command(cmd)
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"bad send-back request header: {e}")
        if h.offset < 0:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR, f"the request header field 'offset' is negative: {h.offset}"
            )
        if self.settings.identity.role == BrokerRole.SLAVE:
            return cmd.response(
                ResponseCode.NO_PERMISSION, f"the broker[{self.settings.addr}] sending message is forbidden"
            )
        group = self.groups.find(h.group)
        if group is None:
            return cmd.response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {h.group}"
            )
        if group.retry_queue_nums <= 0:
            return cmd.response(ResponseCode.SUCCESS)  # retries are off for this group: drop it
        topic = retry_topic(h.group)
        config = self._topic(conn, cmd, topic, group.retry_queue_nums)
        if isinstance(config, RemotingCommand):
            return config
        if not config.perm & PERM_WRITE:
            return cmd.response(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden"
            )
        msg = self.store.look_message(h.offset)
        if msg is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {h.offset}")
        # the offset may name any message: without SUB on its topic, its body is not the group's to retry
        denied = acl_refusal(conn, cmd, stored_needs(msg.topic, msg.properties))
        if denied is not None:
            return denied
        max_times = h.max_reconsume_times if h.max_reconsume_times is not None else group.retry_max_times
        decision = decide_send_back(
            reconsume_times=msg.reconsume_times, max_reconsume_times=max_times, delay_level=h.delay_level
        )
        if decision.dead_letter:
            topic = dlq_topic(h.group)
            config = self._topic(conn, cmd, topic, DLQ_QUEUE_NUMS)
            if isinstance(config, RemotingCommand):
                return config
            queue_id = 0
        else:
            queue_id = random.randrange(max(1, config.write_queue_nums))
        inner = send_back_inner(
            msg,
            topic=topic,
            queue_id=queue_id,
            delay_level=decision.delay_level,
            offset_msg_id=msg.offset_msg_id,
        )
        result = self.store.put_message(inner)
        if result.status != PutMessageStatus.PUT_OK:
            return cmd.response(ResponseCode.SYSTEM_ERROR, result.status.name)
        self.stats.on_put(topic, 1, result.wrote_bytes)
        self.stats.on_send_back(h.group, decision.dead_letter, h.origin_topic or msg.topic)
        log.debug(
            "sent back %s of %s (reconsumeTimes %d) to %s%s",
            msg.offset_msg_id, msg.topic, msg.reconsume_times + 1, topic,
            "" if decision.dead_letter else f" at delay level {decision.delay_level}",
        )
        return cmd.response(ResponseCode.SUCCESS)

    def _topic(
        self, conn: Connection, cmd: RemotingCommand, topic: str, queue_nums: int
    ) -> TopicConfig | RemotingCommand:
        """The retry or DLQ topic, created on first use; Apache's answer when ``topic`` cannot be one."""
        try:
            return self.topics.create_in_send_back(topic, queue_nums, PERM_READ | PERM_WRITE)
        except ConfigRefused as e:
            why = str(e)
        if len(topic) > MAX_TOPIC_LENGTH:
            longest = MAX_TOPIC_LENGTH - len(RETRY_GROUP_TOPIC_PREFIX)
            why = (
                f"the name is {len(topic)} characters, over the topic max length {MAX_TOPIC_LENGTH}: "
                f"a group of more than {longest} characters has no retry topic, so its messages cannot be "
                "sent back"
            )
        _refusals.warning(
            "send-back from %s refused: no topic %.140s: %s", conn.remote_addr if conn else "?", topic, why
        )
        return cmd.response(ResponseCode.SYSTEM_ERROR, f"topic[{topic}] not exist: {why}")
