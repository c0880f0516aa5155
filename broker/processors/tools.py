"""The rest of what mqadmin asks a broker: its configuration (GET_BROKER_CONFIG 26; UPDATE_BROKER_CONFIG
25 is refused: no setting here changes at run time), a producer group's connections
(GET_PRODUCER_CONNECTION_LIST 204), copying a group's offsets to another (CLONE_GROUP_OFFSET 314) and
the offsets the group's online consumers hold (INVOKE_BROKER_TO_GET_CONSUMER_STATUS 223)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pyrocketmq.remoting.body import ClientConnection, GetConsumerStatusBody, MessageQueue, ProducerConnection
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.names import check_group_name
from pyrocketmq.remoting.properties import format_properties
from pyrocketmq.remoting.transport import Connection, HandlerRegistry, HandlerResult

from .consumer import _language_name

if TYPE_CHECKING:
    from ..client_manager import ConsumerManager, ProducerManager
    from ..consumer_offset import ConsumerOffsetManager
    from ..settings import BrokerSettings
    from ..topic_config import TopicConfigManager

log = logging.getLogger("pyrocketmq.broker")


class ToolsProcessor:
    def __init__(self, *, settings: BrokerSettings, topics: TopicConfigManager, offsets: ConsumerOffsetManager,
                 consumers: ConsumerManager, producers: ProducerManager) -> None:
        self.settings = settings
        self.topics = topics
        self.offsets = offsets
        self.consumers = consumers
        self.producers = producers

    def register(self, server: HandlerRegistry) -> None:
        server.register(RequestCode.GET_BROKER_CONFIG, self.handle_get_config)
        server.register(RequestCode.UPDATE_BROKER_CONFIG, self.handle_update_config)
        server.register(RequestCode.GET_PRODUCER_CONNECTION_LIST, self.handle_producer_connections)
        server.register(RequestCode.CLONE_GROUP_OFFSET, self.handle_clone_offsets)
        server.register(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, self.handle_consumer_status)

    async def handle_consumer_status(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """Ask the group's online consumers (or the one ``clientAddr`` names: a client id) for their
        offsets on the topic (GET_CONSUMER_STATUS_FROM_CLIENT), as Apache's broker does."""
        topic, group = cmd.get_str("topic") or "", cmd.get_str("group") or ""
        origin = cmd.get_str("clientAddr") or ""
        info = self.consumers.find(group)
        channels = sorted(info.channels.values(), key=lambda c: c.client_id) if info is not None else []
        if not channels:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"No Any Consumer online in the consumer group: [{group}]")
        table: dict[str, dict[MessageQueue, int]] = {}
        for ch in channels:
            if origin and origin != ch.client_id:
                continue
            ask = RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT,
                                          {"topic": topic, "group": group, "clientAddr": origin})
            try:
                resp = await ch.conn.invoke(ask, 5.0)
                if resp.code == ResponseCode.SUCCESS and resp.payload:
                    table[ch.client_id] = GetConsumerStatusBody.from_json(resp.payload).message_queue_table
            except Exception as e:  # noqa: BLE001 — one client failing does not stop the others (as Apache)
                log.warning("consumer status of %s from %s failed: %s", group, ch.client_id, e)
        return cmd.response(ResponseCode.SUCCESS, body=GetConsumerStatusBody(consumer_table=table).to_json())

    def handle_get_config(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        version = self.topics.data_version.to_json().decode()
        return cmd.response(ResponseCode.SUCCESS, None, {"version": version}, body=format_properties(self.settings.effective))

    def handle_update_config(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        keys = sorted(line.partition("=")[0].strip() for line in bytes(cmd.payload or b"").decode("utf-8", "replace")
                      .splitlines() if line.strip() and not line.lstrip().startswith(("#", "!")))  # fmt: skip
        shown = ", ".join(k[:64] for k in keys[:10]) or "(none)"
        log.info("UPDATE_BROKER_CONFIG from %s refused: %s", conn.remote_addr, shown)
        return cmd.response(ResponseCode.SYSTEM_ERROR,
                            f"no broker setting changes at run time here (asked: {shown}); change broker.conf "
                            "and restart the broker (on Kubernetes: spec.config of the Broker rolls its pods)")

    def handle_producer_connections(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        group = cmd.get_str("producerGroup") or ""
        channels = self.producers.groups.get(group)
        if not channels:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"the producer group[{group}] not exist")
        body = ProducerConnection([
            ClientConnection(client_id=ch.client_id, client_addr=getattr(ch.conn, "remote_addr", ""),
                             language=_language_name(ch.language), version=ch.version)
            for ch in sorted(channels.values(), key=lambda c: c.client_id)
        ])  # fmt: skip
        return cmd.response(ResponseCode.SUCCESS, body=body.to_json())

    def handle_clone_offsets(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        """Apache's rules: every topic the source group has offsets for (or the one named); online,
        a topic the source group's consumers do not subscribe to is skipped."""
        src, dest = cmd.get_str("srcGroup") or "", cmd.get_str("destGroup") or ""
        for name in (src, dest):
            problem = check_group_name(name)
            if problem is not None:
                return cmd.response(ResponseCode.SYSTEM_ERROR, f"clone group offset: {problem}")
        topic = cmd.get_str("topic") or ""
        offline = (cmd.get_str("offline") or "false").lower() == "true"
        info = self.consumers.find(src)
        for t in sorted([topic] if topic else self.offsets.topics_of_group(src)):
            if self.topics.get(t) is None:
                log.warning("clone group offset: topic %s is not on this broker", t[:255])
                continue
            if not offline and info is not None and info.subscriptions and t not in info.subscriptions:
                log.warning("clone group offset: group %s is online but does not subscribe to %s", src, t)
                continue
            for qid, offset in self.offsets.offsets(src, t).items():
                self.offsets.commit(dest, t, qid, offset)
        return cmd.response(ResponseCode.SUCCESS)
