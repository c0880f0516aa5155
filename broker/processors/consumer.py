"""Consumer-group requests beyond heartbeats: queue locks for orderly consumption (41, 42), the
group's connections (203), rewinding a group (222 → 220 to every member), and calls relayed to
one consumer (307 GET_CONSUMER_RUNNING_INFO, 309 CONSUME_MESSAGE_DIRECTLY).

Reset offset (RocketMQ 4.9's ``Broker2Client.resetOffset``): for every queue of the topic here, the
offset at ``timestamp`` (-1: the max offset); unless ``isForce``, a queue whose committed offset is
already before that keeps it. The table goes oneway to every member of the group
(RESET_CONSUMER_CLIENT_OFFSET, body ResetOffsetBody) and into the broker's committed offsets, and
is the answer; with no member online the answer is CONSUMER_NOT_ONLINE (206) and nothing changes.

A relayed call carries the caller's fields but not its signature. CONSUME_MESSAGE_DIRECTLY hands the
consumer a stored message found by its offset id: with the ACL on, only when the caller may read
that message's topic (:func:`~pyrocketmq.server.acl_service.acl_refusal`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pyrocketmq.remoting.acl_sign import ACL_FIELDS
from pyrocketmq.remoting.body import (
    ClientConnection,
    ConsumerConnection,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    ResetOffsetBody,
    UnlockBatchRequestBody,
)
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand, language_name
from pyrocketmq.remoting.header import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    HeaderError,
    ResetOffsetRequestHeader,
)
from pyrocketmq.remoting.message import decode_message, decode_offset_msg_id
from pyrocketmq.remoting.names import check_group_name
from pyrocketmq.remoting.transport import (
    Connection,
    HandlerRegistry,
    HandlerResult,
    RemotingError,
    RemotingTimeoutError,
)
from pyrocketmq.server.acl_service import acl_refusal
from pyrocketmq.server.acl_table import stored_needs

from ..queue_lock import QueueLockTable
from .services import BrokerServices

log = logging.getLogger("pyrocketmq.broker")

CALL_CLIENT_TIMEOUT_S = 10.0
"""How long a request relayed to a consumer (307, 309) may take (Java's ``callClient``)."""


@dataclass(kw_only=True, eq=False, repr=False)
class ConsumerProcessor(BrokerServices):
    locks: QueueLockTable = field(default_factory=QueueLockTable)
    """The queues each group's members hold for orderly consumption."""

    def register(self, server: HandlerRegistry) -> None:
        server.register(RequestCode.LOCK_BATCH_MQ, self.handle_lock)
        server.register(RequestCode.UNLOCK_BATCH_MQ, self.handle_unlock)
        server.register(RequestCode.GET_CONSUMER_CONNECTION_LIST, self.handle_connection_list)
        server.register(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, self.handle_reset_offset)
        server.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self.handle_call_consumer)
        server.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, self.handle_call_consumer)

    # -- locks ------------------------------------------------------------------------------------
    def handle_lock(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        try:
            req = LockBatchRequestBody.from_json(cmd.payload or b"{}")
        except (ValueError, TypeError, KeyError) as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"bad lock request body: {e}")
        locked = self.locks.try_lock_batch(req.consumer_group, req.mq_set, req.client_id)
        body = LockBatchResponseBody(lock_ok_mq_set=sorted(locked)).to_json()
        return cmd.response(ResponseCode.SUCCESS, body=body)

    def handle_unlock(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        try:
            req = UnlockBatchRequestBody.from_json(cmd.payload or b"{}")
        except (ValueError, TypeError, KeyError) as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"bad unlock request body: {e}")
        self.locks.unlock_batch(req.consumer_group, req.mq_set, req.client_id)
        return cmd.response(ResponseCode.SUCCESS)

    # -- connections ------------------------------------------------------------------------------
    def handle_connection_list(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        try:
            group = GetConsumerConnectionListRequestHeader.from_command(cmd).consumer_group
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        info = self.consumers.find(group)
        if info is None or not info.channels:
            return cmd.response(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        body = ConsumerConnection(
            connection_set=[
                ClientConnection(
                    client_id=ch.client_id,
                    client_addr=getattr(ch.conn, "remote_addr", ""),
                    language=language_name(ch.language),
                    version=ch.version,
                )
                for ch in sorted(info.channels.values(), key=lambda c: c.client_id)
            ],
            subscription_table=dict(info.subscriptions),
            consume_type=info.consume_type,
            message_model=info.message_model,
            consume_from_where=info.consume_from_where,
        )
        return cmd.response(ResponseCode.SUCCESS, body=body.to_json())

    # -- reset offset -----------------------------------------------------------------------------
    def reset_table(
        self, topic: str, group: str, timestamp: int, force: bool
    ) -> dict[MessageQueue, int] | None:
        """Per-queue offsets of a reset (module docstring); None when the topic is not here."""
        config = self.topics.get(topic)
        if config is None:
            return None
        store = self.store
        name = self.settings.identity.broker_name
        table: dict[MessageQueue, int] = {}
        for qid in range(config.write_queue_nums):
            if timestamp == -1:
                target = store.get_max_offset_in_queue(topic, qid)
            else:
                target = store.get_offset_by_time(topic, qid, timestamp)
            target = max(0, target)
            committed = self.offsets.query(group, topic, qid)
            if force or committed < 0 or target < committed:
                table[MessageQueue(topic, name, qid)] = target
            else:
                table[MessageQueue(topic, name, qid)] = committed
        return table

    def handle_reset_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        try:
            h = ResetOffsetRequestHeader.from_command(cmd)
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"bad reset offset request header: {e}")
        problem = check_group_name(h.group)
        if problem is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, problem)
        table = self.reset_table(h.topic, h.group, h.timestamp, h.is_force)
        if table is None:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR,
                f"[reset-offset] reset offset failed, no topic in this broker. topic={h.topic}",
            )
        info = self.consumers.find(h.group)
        if info is None or not info.channels:
            return cmd.response(
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"Consumer not online, so can not reset offset, Group: {h.group} Topic: {h.topic} "
                f"Timestamp: {h.timestamp}",
            )
        body = ResetOffsetBody(offset_table=table).to_json()
        for mq, offset in table.items():
            self.offsets.commit(h.group, mq.topic, mq.queue_id, offset)
        for client in list(info.channels.values()):
            request = RemotingCommand.request(
                RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
                {"topic": h.topic, "group": h.group, "timestamp": h.timestamp, "isForce": h.is_force},
                body,
            )
            try:
                client.conn.invoke_oneway(request)
                log.info(
                    "reset offset of %s/%s to %d: told %s", h.group, h.topic, h.timestamp, client.client_id
                )
            except RemotingError as e:
                log.warning("reset offset: could not tell %s: %s", client.client_id, e)
        return cmd.response(ResponseCode.SUCCESS, body=body)

    # -- calls relayed to one consumer ------------------------------------------------------------
    def handle_call_consumer(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        directly = cmd.code == RequestCode.CONSUME_MESSAGE_DIRECTLY
        try:
            if directly:
                d = ConsumeMessageDirectlyResultRequestHeader.from_command(cmd)
                group, client_id = d.consumer_group, d.client_id or ""
            else:
                r = GetConsumerRunningInfoRequestHeader.from_command(cmd)
                group, client_id = r.consumer_group, r.client_id
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        info = self.consumers.find(group)
        channel = None
        if info is not None:
            channel = next((c for c in info.channels.values() if c.client_id == client_id), None)
        if channel is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        # the caller's signature is not the consumer's business (nor to be replayed by it)
        fields = {k: v for k, v in cmd.ext_fields.items() if k not in ACL_FIELDS}
        body = cmd.payload if cmd.body is not None else None
        if directly:
            # The consumer gets the stored message itself, found by the offset id (as Java does).
            fields["brokerName"] = self.settings.identity.broker_name
            try:
                _, _, offset = decode_offset_msg_id(fields.get("msgId") or "")
                body = self.store.look_message_by_offset(offset)
                msg = decode_message(body, read_body=False)[0] if body is not None else None
            except ValueError:  # not an offset id, or no whole record there
                body = msg = None
            if msg is None:
                return cmd.response(
                    ResponseCode.SYSTEM_ERROR, f"no message with the offset id {fields.get('msgId')!r}"
                )
            denied = acl_refusal(conn, cmd, stored_needs(msg.topic, msg.properties))
            if denied is not None:
                return denied
        request = RemotingCommand.request(cmd.code, fields, body)
        return self._relay(cmd, channel.conn, request, group, client_id)

    async def _relay(
        self, cmd: RemotingCommand, target: Connection, request: RemotingCommand, group: str, client_id: str
    ) -> RemotingCommand:
        try:
            answer = await target.invoke(request, CALL_CLIENT_TIMEOUT_S)
        except RemotingTimeoutError as e:
            return cmd.response(
                ResponseCode.CONSUME_MSG_TIMEOUT, f"consumer <{group}> <{client_id}> Timeout: {e}"
            )
        except Exception as e:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR, f"invoke consumer <{group}> <{client_id}> Exception: {e}"
            )
        response = cmd.response(
            answer.code, answer.remark, None, answer.payload if answer.body is not None else None
        )
        response.ext_fields = dict(answer.ext_fields)
        return response
