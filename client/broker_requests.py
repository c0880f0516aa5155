"""What brokers ask a client (requests on the client's own connections): a consumer's running info
(307), "your group changed" (40), reset your offsets (220), a consumer's offsets (221) and
transaction check-backs (39). Each is handed to the group's consumer or producer."""

from __future__ import annotations

import logging
from typing import Any, Protocol

import orjson

from pyrocketmq.remoting.body import GetConsumerStatusBody, MessageQueue
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.message import decode_messages
from pyrocketmq.remoting.remoting_client import RemotingClient
from pyrocketmq.remoting.transport import Connection


class _Client(Protocol):
    """What the handlers need of the client instance."""

    client_id: str
    consumers: dict[str, Any]
    producers: dict[str, Any]

log = logging.getLogger("pyrocketmq.client")


class BrokerRequests:
    def __init__(self, inst: _Client) -> None:
        self.inst = inst

    def register(self, remoting: RemotingClient) -> None:
        remoting.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self.running_info)
        remoting.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self.ids_changed)
        remoting.register(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self.reset_offset)
        remoting.register(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, self.consumer_status)
        remoting.register(RequestCode.CHECK_TRANSACTION_STATE, self.check_transaction)

    def running_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        group = cmd.get_str("consumerGroup") or ""
        consumer = self.inst.consumers.get(group)
        if consumer is None:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer"
            )
        info_fn = getattr(consumer, "running_info", None)
        info = (
            info_fn()
            if info_fn is not None
            else {"properties": {}, "subscriptionSet": [], "mqTable": {}, "statusTable": {}}
        )
        info.setdefault("properties", {})["PROP_CLIENT_VERSION"] = "V4_9_7"
        return cmd.response(ResponseCode.SUCCESS, body=orjson.dumps(info))

    def ids_changed(self, conn: Connection, cmd: RemotingCommand) -> None:
        group = cmd.get_str("consumerGroup") or ""
        consumer = self.inst.consumers.get(group)
        hook = getattr(consumer, "on_consumer_ids_changed", None)
        log.info(
            "client %s: broker %s says the members of %s changed",
            self.inst.client_id,
            conn.remote_addr,
            group,
        )
        if hook is not None:
            hook()
        return None

    def reset_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        group = cmd.get_str("group") or ""
        topic = cmd.get_str("topic") or ""
        consumer = self.inst.consumers.get(group)
        hook = getattr(consumer, "on_reset_offset", None)
        if hook is None:
            log.info(
                "client %s: reset of %s/%s ignored: no consumer of that group here",
                self.inst.client_id,
                group,
                topic,
            )
            return None
        offsets = parse_reset_offset_body(cmd.payload)
        hook(topic, offsets)
        return cmd.response(ResponseCode.SUCCESS)

    def check_transaction(self, conn: Connection, cmd: RemotingCommand) -> None:
        try:
            msgs = decode_messages(cmd.payload)
        except ValueError as e:
            log.warning(
                "client %s: undecodable transaction check from %s: %s",
                self.inst.client_id,
                conn.remote_addr,
                e,
            )
            return None
        if not msgs:
            return None
        msg = msgs[0]
        group = msg.properties.get("PGROUP", "")
        producer = self.inst.producers.get(group)
        hook = getattr(producer, "on_check_transaction", None)
        if hook is None:
            log.info(
                "client %s: transaction check for group %s ignored: no transactional producer",
                self.inst.client_id,
                group,
            )
            return None
        hook(conn.remote_addr, msg, dict(cmd.ext_fields))
        return None

    def consumer_status(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """The group's offsets on a topic as this client holds them (mqadmin ``getConsumerStatus``)."""
        group, topic = cmd.get_str("group") or "", cmd.get_str("topic") or ""
        consumer = self.inst.consumers.get(group)
        offsets_fn = getattr(consumer, "local_offsets", None)
        table = offsets_fn(topic) if offsets_fn is not None else {}
        return cmd.response(
            ResponseCode.SUCCESS, body=GetConsumerStatusBody(message_queue_table=table).to_json()
        )


def parse_reset_offset_body(body: bytes | bytearray | memoryview) -> dict[MessageQueue, int]:
    """``{"offsetTable":{{"brokerName":..,"queueId":..,"topic":..}:123, …}}`` (fastjson's object keys)."""
    from pyrocketmq.remoting.body import ResetOffsetBody

    return dict(ResetOffsetBody.from_json(body).offset_table)
