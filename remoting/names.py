"""The names RocketMQ reserves, defined once: system topics and groups, the retry/DLQ prefixes,
permission bits and the topic-name rule (Java ``TopicValidator``, ``MixAll``, ``PermName``).

Broker, name server, clients and operator import them from here; none defines its own copy.
"""

from __future__ import annotations

import re

# -- permissions (PermName) -------------------------------------------------------------------
PERM_PRIORITY = 8
PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1

# -- topics ---------------------------------------------------------------------------------------
AUTO_CREATE_TOPIC = "TBW102"
"""The template a broker creates unknown topics from when ``autoCreateTopicEnable`` is on."""
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
BENCHMARK_TOPIC = "BenchmarkTest"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
"""Where delayed messages and retries wait, one queue per delay level."""
TIMER_TOPIC = "rmq_sys_wheel_timer"
"""Where timer messages (any-millisecond delivery, RocketMQ 5's timer) wait, in queue 0."""
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
SYSTEM_TOPIC_PREFIXES = ("rmq_sys_", "RMQ_SYS_")

SYSTEM_TOPICS = frozenset(
    {
        AUTO_CREATE_TOPIC,
        SELF_TEST_TOPIC,
        BENCHMARK_TOPIC,
        OFFSET_MOVED_EVENT,
        SCHEDULE_TOPIC,
        TIMER_TOPIC,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
    }
)
NOT_ALLOWED_SEND_TOPICS = frozenset({SCHEDULE_TOPIC, TIMER_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC})
"""Topics a producer may not send to (Java ``TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET``)."""

MAX_TOPIC_LENGTH = 127
MAX_GROUP_LENGTH = 255
TOPIC_PATTERN = re.compile(r"^[%|a-zA-Z0-9_-]+$")

ORDER_TOPIC_CONFIG_NAMESPACE = "ORDER_TOPIC_CONFIG"
"""The name servers' KV namespace of orderly topics' queue layouts (``broker-a:4;broker-b:4``)."""

# -- groups -----------------------------------------------------------------------------------
SYSTEM_GROUPS = (
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "__MONITOR_CONSUMER",
    "CLIENT_INNER_PRODUCER",
    "SELF_TEST_P_GROUP",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
    "CID_ONSAPI_PULL",
    "CID_RMQ_SYS_TRANS",
)
"""The groups every broker knows from the start (Java ``SubscriptionGroupManager.init``)."""


def retry_topic(group: str) -> str:
    """``%RETRY%<group>``: where a group's failed messages come back."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """``%DLQ%<group>``: where a group's messages go after their last retry."""
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_system_topic(topic: str) -> bool:
    """A topic the broker owns (not a retry or DLQ topic: those belong to their group)."""
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIXES)


def check_topic_name(topic: str | None) -> str | None:
    """Why ``topic`` is not a valid topic name, or ``None`` when it is.

    >>> check_topic_name("Orders"), check_topic_name("a/b") is not None
    (None, True)
    """
    if topic in _VALID_TOPICS:  # every send asks: the names already checked answer from a set
        return None
    if not topic:
        return "the topic name is empty"
    if len(topic.encode()) > MAX_TOPIC_LENGTH:
        return f"the topic name is longer than {MAX_TOPIC_LENGTH} bytes"
    if not TOPIC_PATTERN.match(topic):
        return f"the topic name {topic[:64]!r} contains characters other than ^[%|a-zA-Z0-9_-]+$"
    if len(_VALID_TOPICS) >= _VALID_TOPICS_MAX:
        _VALID_TOPICS.clear()
    _VALID_TOPICS.add(topic)
    return None


_VALID_TOPICS: set[str] = set()
_VALID_TOPICS_MAX = 8192


def check_group_name(group: str | None) -> str | None:
    """Why ``group`` is not a valid consumer or producer group name, or ``None`` when it is (the
    topic rule's characters, at most 255 bytes: Java's client ``Validators.checkGroup``).

    >>> check_group_name("GID_orders"), check_group_name("../x") is not None
    (None, True)
    """
    if not group:
        return "the group name is empty"
    if len(group.encode()) > MAX_GROUP_LENGTH:
        return f"the group name is longer than {MAX_GROUP_LENGTH} bytes"
    if not TOPIC_PATTERN.match(group):
        return f"the group name {group[:64]!r} contains characters other than ^[%|a-zA-Z0-9_-]+$"
    return None
