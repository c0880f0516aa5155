"""Client management: HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38).

When a group's members or subscriptions change, every member gets a oneway
NOTIFY_CONSUMER_IDS_CHANGED (40) so it rebalances at once instead of within 20 s.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import orjson

from pyrocketmq.remoting.body import HeartbeatData
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.transport import Connection, RemotingError

from ..topic_config import PERM_READ, PERM_WRITE, RETRY_GROUP_TOPIC_PREFIX

if TYPE_CHECKING:
    from ..app import Broker

log = logging.getLogger("pyrocketmq.broker")


class ClientProcessor:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def register(self, server) -> None:
        server.register(RequestCode.HEART_BEAT, self.handle_heartbeat)
        server.register(RequestCode.UNREGISTER_CLIENT, self.handle_unregister)
        server.register(RequestCode.GET_CONSUMER_LIST_BY_GROUP, self.handle_consumer_list)

    def handle_heartbeat(self, conn: Connection, cmd: RemotingCommand):
        try:
            data = HeartbeatData.from_json(cmd.body or b"{}")
        except (ValueError, TypeError, KeyError) as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"bad heartbeat body: {e}")
        broker = self.broker
        for consumer in data.consumer_data_set:
            group_config = broker.groups.find(consumer.group_name)
            if group_config is not None and consumer.message_model == "CLUSTERING":
                broker.topics.create_in_send_back(
                    RETRY_GROUP_TOPIC_PREFIX + consumer.group_name,
                    max(1, group_config.retry_queue_nums),
                    PERM_READ | PERM_WRITE,
                )
            changed = broker.consumers.register(data.client_id, conn, cmd.language, cmd.version, consumer)
            if changed and (group_config is None or group_config.notify_consumer_ids_changed_enable):
                log.info("consumer group %s changed: %s", consumer.group_name, broker.consumers.find(consumer.group_name).client_ids())
                self.notify_group(consumer.group_name)
        for producer in data.producer_data_set:
            broker.producers.register(data.client_id, conn, cmd.language, cmd.version, producer.group_name)
        conn.attrs["client_id"] = data.client_id
        return cmd.response(ResponseCode.SUCCESS)

    def handle_unregister(self, conn: Connection, cmd: RemotingCommand):
        producer_group = cmd.get_str("producerGroup")
        consumer_group = cmd.get_str("consumerGroup")
        if producer_group:
            self.broker.producers.unregister(conn, producer_group)
        if consumer_group and self.broker.consumers.unregister(conn, consumer_group):
            self.notify_group(consumer_group)
        return cmd.response(ResponseCode.SUCCESS)

    def handle_consumer_list(self, conn: Connection, cmd: RemotingCommand):
        group = cmd.get_str("consumerGroup") or ""
        info = self.broker.consumers.find(group)
        if info is None or not info.channels:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}")
        return cmd.response(ResponseCode.SUCCESS, body=orjson.dumps({"consumerIdList": info.client_ids()}))

    def notify_group(self, group: str) -> None:
        info = self.broker.consumers.find(group)
        if info is None:
            return
        for conn in list(info.channels):
            try:
                conn.invoke_oneway(RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": group}))
            except RemotingError:
                pass

    def connection_closed(self, conn: Connection) -> None:
        self.broker.producers.remove_connection(conn)
        for group in self.broker.consumers.remove_connection(conn):
            log.info("consumer %s of group %s disconnected", conn.attrs.get("client_id", conn.remote_addr), group)
            self.notify_group(group)

    def scan_expired(self) -> None:
        for group, conn in self.broker.consumers.scan_expired():
            log.info("consumer connection %s of group %s expired", conn.remote_addr, group)
            conn.close("channel expired")
            self.notify_group(group)
        self.broker.producers.scan_expired()
