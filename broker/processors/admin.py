"""Administration: topics (17, 215, 21), subscription groups (200, 201), view by id (33),
topic and consume statistics (202, 208), runtime info (28).

View by id names a commitlog offset, not a topic: with the ACL on, the message found is returned
only to an account with SUB on its topic (:func:`~pyrocketmq.server.acl_service.acl_refusal`)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyrocketmq.remoting.body import (
    ConsumeStats,
    KVTable,
    MessageQueue,
    OffsetWrapper,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
    TopicOffset,
    TopicStatsTable,
)
from pyrocketmq.remoting.code import RequestCode, ResponseCode
from pyrocketmq.remoting.command import RemotingCommand
from pyrocketmq.remoting.header import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
    HeaderError,
    ViewMessageRequestHeader,
)
from pyrocketmq.remoting.message import MessageDecodeError, decode_message
from pyrocketmq.remoting.message_type import AttributeRefused, parse_attributes
from pyrocketmq.remoting.names import AUTO_CREATE_TOPIC, SCHEDULE_TOPIC, check_group_name, check_topic_name
from pyrocketmq.remoting.transport import Connection, HandlerRegistry, HandlerResult
from pyrocketmq.server.acl_service import acl_refusal
from pyrocketmq.server.acl_table import stored_needs
from pyrocketmq.server.config_checks import ConfigRefused

from .services import BrokerServices

_CREATE_TOPIC_DEFAULTS = {"defaultTopic": AUTO_CREATE_TOPIC, "readQueueNums": "16", "writeQueueNums": "16",
                          "perm": "6", "topicFilterType": "SINGLE_TAG"}

if TYPE_CHECKING:
    from ..delay_service import ScheduleService

log = logging.getLogger("pyrocketmq.broker")


@dataclass(kw_only=True, eq=False, repr=False)
class AdminProcessor(BrokerServices):
    schedule: ScheduleService | None
    boot_ms: int
    """When the broker started (epoch ms): the runtime info's ``bootTimestamp``."""

    def register(self, server: HandlerRegistry) -> None:
        server.register(RequestCode.UPDATE_AND_CREATE_TOPIC, self.handle_create_topic)
        server.register(RequestCode.DELETE_TOPIC_IN_BROKER, self.handle_delete_topic)
        server.register(RequestCode.GET_ALL_TOPIC_CONFIG, self.handle_all_topic_config)
        server.register(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, self.handle_update_group)
        server.register(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, self.handle_all_groups)
        server.register(RequestCode.DELETE_SUBSCRIPTIONGROUP, self.handle_delete_group)
        server.register(RequestCode.VIEW_MESSAGE_BY_ID, self.handle_view_message)
        server.register(RequestCode.GET_TOPIC_STATS_INFO, self.handle_topic_stats)
        server.register(RequestCode.GET_CONSUME_STATS, self.handle_consume_stats)
        server.register(RequestCode.GET_BROKER_RUNTIME_INFO, self.handle_runtime_info)

    def handle_create_topic(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        try:  # Java's header requires every field; older tools leave some out: Java's defaults then
            h = CreateTopicRequestHeader.from_ext({**_CREATE_TOPIC_DEFAULTS, **cmd.ext_fields})
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"bad topic header: {e}")
        topic = h.topic
        problem = check_topic_name(topic)
        if problem is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, problem)
        if self.topics.is_system(topic):
            return cmd.response(
                ResponseCode.NO_PERMISSION,
                f"the topic[{topic}] is a system topic: it cannot be created or updated",
            )
        old = self.topics.get(topic)
        attributes = dict(old.attributes) if old is not None else {}
        if h.attributes:
            try:
                attributes = parse_attributes(h.attributes, attributes)
            except AttributeRefused as e:
                return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        config = TopicConfig(
            topic_name=topic,
            read_queue_nums=h.read_queue_nums,
            write_queue_nums=h.write_queue_nums,
            perm=h.perm,
            topic_filter_type=h.topic_filter_type or "SINGLE_TAG",
            topic_sys_flag=h.topic_sys_flag or 0,
            order=h.order,
            attributes=tuple(sorted(attributes.items())),
        )
        try:
            self.topics.update(config)
        except ConfigRefused as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        return cmd.response(ResponseCode.SUCCESS)

    def handle_delete_topic(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        try:
            topic = DeleteTopicRequestHeader.from_command(cmd).topic
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        problem = check_topic_name(topic)
        if problem is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, problem)
        if self.topics.is_system(topic):
            return cmd.response(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] is a system topic: it cannot be deleted"
            )
        self.topics.delete(topic)
        self.store.delete_topics({topic})
        self.offsets.remove_topic(topic)
        self.stats.table.forget_topic(topic)
        return cmd.response(ResponseCode.SUCCESS)

    def handle_all_topic_config(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        return cmd.response(ResponseCode.SUCCESS, body=self.topics.wrapper().to_json())

    def handle_update_group(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        try:
            config = SubscriptionGroupConfig.from_json(cmd.payload)
        except (ValueError, TypeError, KeyError) as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"bad subscription group body: {e}")
        try:
            self.groups.update(config)
        except ConfigRefused as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        return cmd.response(ResponseCode.SUCCESS)

    def handle_all_groups(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        groups = self.groups
        wrapper = SubscriptionGroupWrapper(
            subscription_group_table=dict(groups.table), data_version=groups.data_version
        )
        return cmd.response(ResponseCode.SUCCESS, body=wrapper.to_json())

    def handle_delete_group(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        try:
            group = DeleteSubscriptionGroupRequestHeader.from_command(cmd).group_name
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        problem = check_group_name(group)
        if problem is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, problem)
        if self.groups.is_system(group):
            return cmd.response(
                ResponseCode.NO_PERMISSION,
                f"the subscription group[{group}] is a system group: it cannot be deleted",
            )
        self.groups.delete(group)
        return cmd.response(ResponseCode.SUCCESS)

    def handle_view_message(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        try:
            offset = ViewMessageRequestHeader.from_command(cmd).offset
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        if offset < 0:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR, f"the request header field 'offset' is negative: {offset}"
            )
        record = self.store.look_message_by_offset(offset)
        if record is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}")
        try:  # the request named no topic: the account must be able to read the one found
            msg, _ = decode_message(record, read_body=False)
        except MessageDecodeError as e:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR, f"the message at offset {offset} does not decode: {e}"
            )
        denied = acl_refusal(conn, cmd, stored_needs(msg.topic, msg.properties))
        if denied is not None:
            return denied
        return cmd.response(ResponseCode.SUCCESS, body=record)

    def handle_topic_stats(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        try:
            topic = GetTopicStatsInfoRequestHeader.from_command(cmd).topic
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        config = self.topics.get(topic)
        if config is None:
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store = self.store
        name = self.settings.identity.broker_name
        table = {}
        for qid in range(config.write_queue_nums):
            max_off = store.get_max_offset_in_queue(topic, qid)
            last = store.get_message_store_timestamp(topic, qid, max_off - 1) if max_off > 0 else 0
            table[MessageQueue(topic=topic, broker_name=name, queue_id=qid)] = TopicOffset(
                min_offset=max(0, store.get_min_offset_in_queue(topic, qid)),
                max_offset=max_off,
                last_update_timestamp=max(0, last),
            )
        return cmd.response(ResponseCode.SUCCESS, body=TopicStatsTable(offset_table=table).to_json())

    def handle_consume_stats(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        try:
            h = GetConsumeStatsRequestHeader.from_command(cmd)
        except HeaderError as e:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(e))
        group, only = h.consumer_group, h.topic
        topics = {only} if only else self.offsets.topics_of_group(group)
        info = self.consumers.find(group)
        if not only and info is not None:
            topics |= set(info.subscriptions)
        name = self.settings.identity.broker_name
        table = {}
        for topic in sorted(topics):
            config = self.topics.get(topic)
            if config is None:
                continue
            for qid in range(config.write_queue_nums):
                max_off = self.store.get_max_offset_in_queue(topic, qid)
                committed = max(0, self.offsets.query(group, topic, qid))
                last = (
                    self.store.get_message_store_timestamp(topic, qid, committed - 1) if committed > 0 else 0
                )
                table[MessageQueue(topic=topic, broker_name=name, queue_id=qid)] = OffsetWrapper(
                    broker_offset=max_off, consumer_offset=committed, last_timestamp=max(0, last)
                )
        return cmd.response(
            ResponseCode.SUCCESS, body=ConsumeStats(consume_tps=0.0, offset_table=table).to_json()
        )

    def handle_runtime_info(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        stats = self.stats
        table = {
            "brokerVersionDesc": "V4_9_7",
            "brokerVersion": "407",
            "bootTimestamp": str(self.boot_ms),
            "runtime": f"[ {int((time.time() * 1000 - self.boot_ms) / 1000)} seconds ]",
            "msgPutTotalTodayNow": str(stats.put_count),
            "msgGetTotalTodayNow": str(stats.get_count),
            "msgPutTotalYesterdayMorning": "0",
            "msgPutTotalTodayMorning": "0",
            "msgGetTotalYesterdayMorning": "0",
            "msgGetTotalTodayMorning": "0",
            "putTps": f"{stats.put_tps():.2f} 0.0 0.0",
            "getTransferedTps": f"{stats.get_tps():.2f} 0.0 0.0",
            "commitLogMaxOffset": str(self.store.get_max_phy_offset()),
            "commitLogMinOffset": str(self.store.get_min_phy_offset()),
            "pageCacheLockTimeMills": "0",
            "earliestMessageTimeStamp": "0",
            "commitLogDiskRatio": "0.0",
            "dispatchBehindBytes": "0",
            "sendThreadPoolQueueSize": "0",
            "sendThreadPoolQueueCapacity": "10000",
            "pullThreadPoolQueueSize": "0",
            "pullThreadPoolQueueCapacity": "100000",
        }
        schedule = self.schedule
        if schedule is not None:
            # mqadmin brokerStatus: "delivered up to, stored up to" per delay level
            for level in range(1, len(schedule.levels_ms) + 1):
                stored = self.store.get_max_offset_in_queue(SCHEDULE_TOPIC, level - 1)
                table[f"scheduleMessageOffset_{level}"] = f"{schedule.offsets.get(level, 0)},{stored}"
        return cmd.response(ResponseCode.SUCCESS, body=KVTable(table=table).to_json())
