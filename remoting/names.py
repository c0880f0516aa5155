"""The names RocketMQ reserves, defined once: system topics and groups, the retry/DLQ prefixes,
permission bits and the topic-name rule (Java ``TopicValidator``, ``MixAll``, ``PermName``).

Broker, name server, clients and operator import them from here; none defines its own copy.
"""

from __future__ import annotations

import re

# -- ports ----------------------------------------------------------------------------------------
DEFAULT_NAMESRV_PORT = 9876
"""Where a name server listens unless told otherwise (``listenPort``)."""
DEFAULT_BROKER_PORT = 10911
"""Where a broker listens unless told otherwise (``listenPort``)."""

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
TRANSACTION_GROUP_PREFIX = "%GRPC%"
"""5.x producers have no group: their transactional messages are checked back through the producers
publishing the topic, grouped as ``%GRPC%<topic>`` (a 4.x client naming such a group acts as a
publisher of that topic, and needs PUB on it)."""
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
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {SCHEDULE_TOPIC, TIMER_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC}
)
"""Topics a producer may not send to (Java ``TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET``)."""

MAX_TOPIC_LENGTH = 127
"""Java ``TopicValidator.TOPIC_MAX_LENGTH`` (the stored record holds a topic's length in one byte)."""
MAX_GROUP_LENGTH = 255
"""Java ``Validators.CHARACTER_MAX_LENGTH``."""
VALID_PATTERN_STR = "^[%|a-zA-Z0-9_-]+$"
"""Java ``TopicValidator.VALID_PATTERN_STR``, as refusals quote it; Java matches it against the
whole name (``Matcher.matches``), so names are checked with :func:`is_legal_name`."""
_LEGAL_NAME = re.compile(r"[%|a-zA-Z0-9_-]+")

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


def is_legal_name(name: str) -> bool:
    """Whether ``name`` is made of ``%|a-zA-Z0-9_-`` only, all of it (``fullmatch``: ``re.match`` with
    ``$`` would also take a trailing newline).

    >>> is_legal_name("Orders"), is_legal_name("Orders\\n"), is_legal_name("")
    (True, False, False)
    """
    return _LEGAL_NAME.fullmatch(name) is not None


def check_topic_name(topic: str | None) -> str | None:
    """Why ``topic`` is not a valid topic name, or ``None`` when it is; the reasons are Java
    ``TopicValidator.validateTopic``'s remarks, in its order (blank, characters, length).

    >>> check_topic_name("Orders"), check_topic_name("a/b")
    (None, 'The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$')
    """
    if topic in _VALID_TOPICS:  # every send asks: the names already checked answer from a set
        return None
    if not topic or topic.isspace():
        return "The specified topic is blank."
    if not is_legal_name(topic):
        return f"The specified topic contains illegal characters, allowing only {VALID_PATTERN_STR}"
    if len(topic) > MAX_TOPIC_LENGTH:
        return "The specified topic is longer than topic max length."
    if len(_VALID_TOPICS) >= _VALID_TOPICS_MAX:
        _VALID_TOPICS.clear()
    _VALID_TOPICS.add(topic)
    return None


_VALID_TOPICS: set[str] = set()
_VALID_TOPICS_MAX = 8192


def check_group_name(group: str | None) -> str | None:
    """Why ``group`` is not a valid consumer or producer group name, or ``None`` when it is; the
    reasons are Java ``Validators.checkGroup``'s, in its order (blank, length, characters).

    >>> check_group_name("GID_orders"), check_group_name("../x")
    (None, 'the specified group[../x] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$')
    """
    if not group or group.isspace():
        return "the specified group is blank"
    if len(group) > MAX_GROUP_LENGTH:
        return f"the specified group is longer than group max length {MAX_GROUP_LENGTH}."
    if not is_legal_name(group):
        return (f"the specified group[{group[:127]}] contains illegal characters, "
                f"allowing only {VALID_PATTERN_STR}")
    return None


# -- brokers and clusters -----------------------------------------------------------------------
MAX_BROKER_NAME_LENGTH = 127
"""Broker and cluster names are also topics (a broker serves one named after each), hence the
topic length."""
_LEGAL_BROKER_NAME = re.compile(r"[%|a-zA-Z0-9_.-]+")


def check_broker_name(name: str | None, what: str = "brokerName") -> str | None:
    """Why ``name`` is no broker (or, with ``what="clusterName"``, cluster) name, or ``None``: the
    topic characters plus ``.`` (Kubernetes object names), at most 127 of them.

    >>> check_broker_name("broker-a"), check_broker_name("a b")
    (None, "brokerName 'a b' contains characters other than %|a-zA-Z0-9_.-")
    """
    if not name:
        return f"{what} is empty"
    if len(name) > MAX_BROKER_NAME_LENGTH:
        return f"{what} is longer than {MAX_BROKER_NAME_LENGTH} characters"
    if _LEGAL_BROKER_NAME.fullmatch(name) is None:
        return f"{what} {name!r} contains characters other than %|a-zA-Z0-9_.-"
    return None
