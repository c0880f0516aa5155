"""Client management: HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38),
CHECK_CLIENT_CONFIG (46: can this broker filter by a subscription's SQL92 selector?).

When a group's members or subscriptions change, every member gets a oneway
NOTIFY_CONSUMER_IDS_CHANGED (40) so it rebalances at once instead of within 20 s.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import orjson

from pyrocketmq.remoting.body import CheckClientRequestBody, HeartbeatData
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import (
    GetConsumerListByGroupRequestHeader,
    HeaderError,
    UnregisterClientRequestHeader,
)
from pyrocketmq.remoting.log_limit import RateLimitedLog
from pyrocketmq.remoting.names import PERM_READ, PERM_WRITE, RETRY_GROUP_TOPIC_PREFIX
from pyrocketmq.remoting.transport import Connection, HandlerRegistry, HandlerResult, RemotingError
from pyrocketmq.server.config_checks import ConfigRefused, heartbeat_problem

from ..message_filter import SQL92, TAG, SqlParseError, not_supported, sql_record_filter

if TYPE_CHECKING:
    from ..client_manager import ConsumerManager, ProducerManager
    from ..subscription_group import SubscriptionGroupManager
    from ..topic_config import TopicConfigManager

log = logging.getLogger("pyrocketmq.broker")
_refusals = RateLimitedLog(log)


class ClientProcessor:
    def __init__(
        self,
        *,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        consumers: ConsumerManager,
        producers: ProducerManager,
        property_filter: bool = False,
    ) -> None:
        self.property_filter = property_filter
        """``enablePropertyFilter``: SQL92 subscriptions are served."""
        self.topics = topics
        self.groups = groups
        self.consumers = consumers
        self.producers = producers

    def register(self, server: HandlerRegistry) -> None:
        server.register(RequestCode.HEART_BEAT, self.handle_heartbeat)
        server.register(RequestCode.UNREGISTER_CLIENT, self.handle_unregister)
        server.register(RequestCode.GET_CONSUMER_LIST_BY_GROUP, self.handle_consumer_list)
        server.register(RequestCode.CHECK_CLIENT_CONFIG, self.handle_check_client_config)

    def handle_check_client_config(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        """Apache's answers: TAG always fits; SQL92 only with ``enablePropertyFilter`` and a selector
        that parses (SUBSCRIPTION_PARSE_FAILED says why not)."""
        try:
            body = CheckClientRequestBody.from_json(cmd.payload or b"{}")
        except (ValueError, TypeError, KeyError) as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"bad check-client body: {e}")
        sub = body.subscription_data
        if sub is None or sub.expression_type in ("", TAG):
            return cmd.response(ResponseCode.SUCCESS)
        if sub.expression_type != SQL92 or not self.property_filter:
            return cmd.response(ResponseCode.SYSTEM_ERROR, not_supported(sub.expression_type))
        try:
            sql_record_filter(sub.sub_string)
        except SqlParseError as e:
            log.info(
                "client %s of group %s: SQL92 selector refused: %s", body.client_id[:128], body.group[:128], e
            )
            return cmd.response(
                ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"parse the selector [{sub.sub_string}] failed: {e}"
            )
        return cmd.response(ResponseCode.SUCCESS)

    def handle_heartbeat(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        try:
            data = HeartbeatData.from_json(cmd.payload or b"{}")
        except (ValueError, TypeError, KeyError) as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"bad heartbeat body: {e}")
        problem = heartbeat_problem(data)
        if problem is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"heartbeat refused: {problem}")
        for consumer in data.consumer_data_set:
            group_config = self.groups.find(consumer.group_name)
            if group_config is not None and consumer.message_model == "CLUSTERING":
                self._make_retry_topic(consumer.group_name, group_config.retry_queue_nums)
            changed = self.consumers.register(data.client_id, conn, cmd.language, cmd.version, consumer)
            if changed and (group_config is None or group_config.notify_consumer_ids_changed_enable):
                info = self.consumers.find(consumer.group_name)
                log.info(
                    "consumer group %s changed: %s", consumer.group_name, info.client_ids() if info else []
                )
                self.notify_group(consumer.group_name)
        for producer in data.producer_data_set:
            self.producers.register(data.client_id, conn, cmd.language, cmd.version, producer.group_name)
        conn.attrs["client_id"] = data.client_id
        return cmd.response(ResponseCode.SUCCESS)

    def _make_retry_topic(self, group: str, queue_nums: int) -> None:
        """The group's ``%RETRY%`` topic, made at its first heartbeat as Apache makes it; a legal group
        of more than 120 characters has none (the name would pass 127) and is registered without it."""
        try:
            self.topics.create_in_send_back(
                RETRY_GROUP_TOPIC_PREFIX + group, max(1, queue_nums), PERM_READ | PERM_WRITE
            )
        except ConfigRefused as e:
            _refusals.info("consumer group %.64s... has no retry topic: %s", group, e)

    def handle_unregister(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        try:
            h = UnregisterClientRequestHeader.from_command(cmd)
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        producer_group, consumer_group = h.producer_group, h.consumer_group
        if producer_group:
            self.producers.unregister(conn, producer_group)
        if consumer_group and self.consumers.unregister(conn, consumer_group):
            self.notify_group(consumer_group)
        return cmd.response(ResponseCode.SUCCESS)

    def handle_consumer_list(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        try:
            group = GetConsumerListByGroupRequestHeader.from_command(cmd).consumer_group
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        info = self.consumers.find(group)
        if info is None or not info.channels:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}")
        return cmd.response(ResponseCode.SUCCESS, body=orjson.dumps({"consumerIdList": info.client_ids()}))

    def notify_group(self, group: str) -> None:
        info = self.consumers.find(group)
        if info is None:
            return
        for conn in list(info.channels):
            try:
                conn.invoke_oneway(
                    RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": group})
                )
            except RemotingError:
                pass

    def connection_closed(self, conn: Connection) -> None:
        self.producers.remove_connection(conn)
        for group in self.consumers.remove_connection(conn):
            log.info(
                "consumer %s of group %s disconnected", conn.attrs.get("client_id", conn.remote_addr), group
            )
            self.notify_group(group)

    def scan_expired(self) -> None:
        for group, conn in self.consumers.scan_expired():
            log.info("consumer connection %s of group %s expired", conn.remote_addr, group)
            conn.close("channel expired")
            self.notify_group(group)
        self.producers.scan_expired()
