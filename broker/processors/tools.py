"""The rest of what mqadmin asks a broker: its configuration (GET_BROKER_CONFIG 26; UPDATE_BROKER_CONFIG
25 for the settings that can change at run time, :mod:`..hot_config`), a producer group's connections
(GET_PRODUCER_CONNECTION_LIST 204), copying a group's offsets to another (CLONE_GROUP_OFFSET 314) and
the offsets the group's online consumers hold (INVOKE_BROKER_TO_GET_CONSUMER_STATUS 223), who reads a
topic (QUERY_TOPIC_CONSUME_BY_WHO 300) and traffic over the last minute/hour/day
(VIEW_BROKER_STATS_DATA 315; both for ``mqadmin statsAll``)."""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import TYPE_CHECKING

import orjson

from pyrocketmq.remoting.body import ClientConnection, GetConsumerStatusBody, MessageQueue, ProducerConnection
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand, language_name
from pyrocketmq.remoting.header import (
    CloneGroupOffsetRequestHeader,
    GetConsumerStatusRequestHeader,
    GetProducerConnectionListRequestHeader,
    HeaderError,
    QueryTopicConsumeByWhoRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from pyrocketmq.remoting.names import check_group_name
from pyrocketmq.remoting.properties import format_properties, parse_properties
from pyrocketmq.remoting.transport import Connection, HandlerRegistry, HandlerResult

from ..hot_config import ConfigRefused, apply_updates
from .services import BrokerServices

if TYPE_CHECKING:
    from ..client_manager import ProducerManager

log = logging.getLogger("pyrocketmq.broker")


@dataclasses.dataclass(kw_only=True, eq=False, repr=False)
class ToolsProcessor(BrokerServices):
    producers: ProducerManager
    """The producer connections of each group."""

    def register(self, server: HandlerRegistry) -> None:
        server.register(RequestCode.GET_BROKER_CONFIG, self.handle_get_config)
        server.register(RequestCode.UPDATE_BROKER_CONFIG, self.handle_update_config)
        server.register(RequestCode.GET_PRODUCER_CONNECTION_LIST, self.handle_producer_connections)
        server.register(RequestCode.CLONE_GROUP_OFFSET, self.handle_clone_offsets)
        server.register(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, self.handle_consumer_status)
        server.register(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, self.handle_consumed_by)
        server.register(RequestCode.VIEW_BROKER_STATS_DATA, self.handle_stats_data)

    def handle_consumed_by(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        """The groups reading ``topic``: online subscribers and groups with offsets for it."""
        try:
            topic = QueryTopicConsumeByWhoRequestHeader.from_command(cmd).topic
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        groups = {g for g, info in self.consumers.groups.items() if topic in info.subscriptions}
        groups |= self.offsets.groups_of_topic(topic)
        return cmd.response(ResponseCode.SUCCESS, body=orjson.dumps({"groupList": sorted(groups)}))

    def handle_stats_data(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        """One stats item's last minute, hour and day (``statsName``, ``statsKey``: a topic or
        ``topic@group``)."""
        try:
            h = ViewBrokerStatsDataRequestHeader.from_command(cmd)
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        name, key = h.stats_name, h.stats_key
        item = self.stats.table.get(name, key)
        if item is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"The stats <{name}> <{key}> not exist")
        now = time.time_ns() // 1_000_000
        body = {
            f"stats{w.capitalize()}": dataclasses.asdict(item.data(w, now)) for w in ("day", "hour", "minute")
        }
        return cmd.response(ResponseCode.SUCCESS, body=orjson.dumps(body))

    async def handle_consumer_status(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """Ask the group's online consumers (or the one ``clientAddr`` names: a client id) for their
        offsets on the topic (GET_CONSUMER_STATUS_FROM_CLIENT), as Apache's broker does."""
        try:
            h = GetConsumerStatusRequestHeader.from_command(cmd)
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        topic, group, origin = h.topic, h.group, h.client_addr or ""
        info = self.consumers.find(group)
        channels = sorted(info.channels.values(), key=lambda c: c.client_id) if info is not None else []
        if not channels:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR, f"No Any Consumer online in the consumer group: [{group}]"
            )
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
        return cmd.response(
            ResponseCode.SUCCESS, None, {"version": version}, body=format_properties(self.settings.effective)
        )

    def handle_update_config(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        """Apply the hot keys (:mod:`..hot_config`) in memory, whole or not at all."""
        updates = parse_properties(bytes(cmd.payload or b"").decode("utf-8", "replace"))
        try:
            changed = apply_updates(self.settings.store, updates, self.settings.effective)
        except ConfigRefused as e:
            log.info("UPDATE_BROKER_CONFIG from %s refused: %s", conn.remote_addr, e)
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        log.warning("broker config changed by %s until restart: %s", conn.remote_addr,
                    ", ".join(f"{k}={v}" for k, v in sorted(changed.items())))
        return cmd.response(ResponseCode.SUCCESS)

    def handle_producer_connections(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        try:
            group = GetProducerConnectionListRequestHeader.from_command(cmd).producer_group
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        channels = self.producers.groups.get(group)
        if not channels:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"the producer group[{group}] not exist")
        body = ProducerConnection([
            ClientConnection(client_id=ch.client_id, client_addr=getattr(ch.conn, "remote_addr", ""),
                             language=language_name(ch.language), version=ch.version)
            for ch in sorted(channels.values(), key=lambda c: c.client_id)
        ])  # fmt: skip
        return cmd.response(ResponseCode.SUCCESS, body=body.to_json())

    def handle_clone_offsets(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        """Apache's rules: every topic the source group has offsets for (or the one named); online,
        a topic the source group's consumers do not subscribe to is skipped."""
        try:
            h = CloneGroupOffsetRequestHeader.from_command(cmd)
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"clone group offset: {e}")
        src, dest, topic, offline = h.src_group, h.dest_group, h.topic or "", h.offline
        for name in (src, dest):
            problem = check_group_name(name)
            if problem is not None:
                return cmd.response(ResponseCode.SYSTEM_ERROR, f"clone group offset: {problem}")
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
