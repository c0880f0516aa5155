"""Whether a topic or subscription-group config may be stored: names and every number within what
its Java field holds and what it means. Pure; used by the broker before it keeps a config (from an
admin request, an auto-creation or a heartbeat) and by the name server before it routes one.

>>> from pyrocketmq.remoting.body import TopicConfig
>>> topic_config_problem(TopicConfig("Orders", 8, 8, 6)) is None
True
>>> topic_config_problem(TopicConfig("Orders", 8, 8, 99))
'perm 99 is not a permission (0..15: 8 priority, 4 read, 2 write, 1 inherit)'
"""

from __future__ import annotations

from pyrocketmq.remoting.body import TopicConfig
from pyrocketmq.remoting.client_bodies import HeartbeatData, SubscriptionGroupConfig
from pyrocketmq.remoting.names import check_group_name, check_topic_name

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
MAX_QUEUE_NUMS = 1024
"""Read/write queues a topic may be created with here (and retry queues a group may have)."""
MAX_ROUTED_QUEUE_NUMS = 65535
"""Queues per broker the name server routes for a topic a broker registers (other brokers may allow
more than this broker creates; none has a use for more than this)."""
PERM_MAX = 15
FILTER_TYPES = ("SINGLE_TAG", "MULTI_TAG")
MAX_CLIENT_ID = 255
MAX_HEARTBEAT_GROUPS = 1024
"""Producer or consumer groups one heartbeat may name (a client with more is not a client)."""
MAX_SUBSCRIPTIONS = 1024
"""Topics one consumer group of one heartbeat may subscribe to."""
MESSAGE_MODELS = ("CLUSTERING", "BROADCASTING")


class ConfigRefused(ValueError):
    """A config that must not be stored; the message says what to fix."""


def perm_problem(perm: int) -> str | None:
    if not 0 <= perm <= PERM_MAX:
        return f"perm {perm} is not a permission (0..15: 8 priority, 4 read, 2 write, 1 inherit)"
    return None


def queue_nums_problem(read: int, write: int, limit: int = MAX_QUEUE_NUMS) -> str | None:
    for name, n in (("readQueueNums", read), ("writeQueueNums", write)):
        if not 0 <= n <= limit:
            return f"{name} {n} is outside 0..{limit}"
    return None


def topic_config_problem(c: TopicConfig, max_queues: int = MAX_QUEUE_NUMS) -> str | None:
    """Why ``c`` must not be stored (with at most ``max_queues`` read or write queues), or None."""
    return (
        check_topic_name(c.topic_name)
        or queue_nums_problem(c.read_queue_nums, c.write_queue_nums, max_queues)
        or perm_problem(c.perm)
        or (
            None
            if c.topic_filter_type in FILTER_TYPES
            else f"topicFilterType {c.topic_filter_type[:32]!r} is not SINGLE_TAG or MULTI_TAG"
        )
        or (
            None
            if 0 <= c.topic_sys_flag <= INT_MAX
            else f"topicSysFlag {c.topic_sys_flag} is not a non-negative int"
        )
    )


def group_config_problem(c: SubscriptionGroupConfig) -> str | None:
    """Why ``c`` must not be stored, or None."""
    if (problem := check_group_name(c.group_name)) is not None:
        return problem
    if not 0 <= c.retry_queue_nums <= MAX_QUEUE_NUMS:
        return f"retryQueueNums {c.retry_queue_nums} is outside 0..{MAX_QUEUE_NUMS}"
    if not -1 <= c.retry_max_times <= INT_MAX:
        return f"retryMaxTimes {c.retry_max_times} is outside -1..{INT_MAX}"
    for name, n in (
        ("brokerId", c.broker_id),
        ("whichBrokerWhenConsumeSlowly", c.which_broker_when_consume_slowly),
    ):
        if not 0 <= n <= LONG_MAX:
            return f"{name} {n} is not a broker id (0 or more)"
    return None


def heartbeat_problem(data: HeartbeatData) -> str | None:
    """Why a heartbeat must be refused before anything in it is registered, or None."""
    if not data.client_id or len(data.client_id) > MAX_CLIENT_ID:
        return f"clientID must be 1..{MAX_CLIENT_ID} characters"
    if len(data.consumer_data_set) + len(data.producer_data_set) > MAX_HEARTBEAT_GROUPS:
        return f"a heartbeat names at most {MAX_HEARTBEAT_GROUPS} groups"
    for p in data.producer_data_set:
        if (problem := check_group_name(p.group_name)) is not None:
            return f"producer group: {problem}"
    for c in data.consumer_data_set:
        if (problem := check_group_name(c.group_name)) is not None:
            return f"consumer group: {problem}"
        if c.message_model not in MESSAGE_MODELS:
            return (f"consumer group {c.group_name}: messageModel {c.message_model[:32]!r} "
                    "is not CLUSTERING or BROADCASTING")
        if len(c.subscription_data_set) > MAX_SUBSCRIPTIONS:
            return f"consumer group {c.group_name}: more than {MAX_SUBSCRIPTIONS} subscriptions"
        for sub in c.subscription_data_set:
            if (problem := check_topic_name(sub.topic)) is not None:
                return f"consumer group {c.group_name} subscribes: {problem}"
    return None
