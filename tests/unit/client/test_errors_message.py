"""Error lookup by response code, and the user-facing message rules."""

from __future__ import annotations

import pytest

from pyrocketmq.client.errors import (
    MQBrokerError,
    MQClientError,
    MQConnectionError,
    MQError,
    MQTimeoutError,
    NoPermissionError,
    QueryNotFoundError,
    ServiceNotAvailableError,
    SystemBusyError,
    TopicNotFoundError,
)
from pyrocketmq.client.message import Message, check_topic, user_properties


@pytest.mark.parametrize(
    ("code", "cls", "retriable"),
    [
        (17, TopicNotFoundError, True),
        (14, ServiceNotAvailableError, True),
        (16, NoPermissionError, True),
        (2, SystemBusyError, False),
        (215, SystemBusyError, False),
        (22, QueryNotFoundError, False),
        (204, MQBrokerError, True),
        (205, MQBrokerError, True),
        (999, MQBrokerError, False),
    ],
)
def test_for_code(code: int, cls: type, retriable: bool) -> None:
    e = MQBrokerError.for_code(code, "why", "1.2.3.4:10911")
    assert type(e) is cls and e.code == code and e.retriable is retriable
    assert e.remark == "why" and e.broker_addr == "1.2.3.4:10911"
    assert "1.2.3.4:10911" in str(e) and "why" in str(e)


def test_messages_name_the_code_and_hint() -> None:
    text = str(MQBrokerError.for_code(17, "topic[X] not exist", "b:1"))
    assert text.startswith("TOPIC_NOT_EXIST (17) from b:1: topic[X] not exist")
    assert "updateTopic" in text


def test_hierarchy() -> None:
    for e in (MQClientError("x"), MQBrokerError(1), MQTimeoutError("t"), MQConnectionError("c")):
        assert isinstance(e, MQError)
    assert isinstance(MQTimeoutError("t"), TimeoutError) and MQTimeoutError.retriable
    assert isinstance(MQConnectionError("c"), ConnectionError) and MQConnectionError.retriable
    assert not MQClientError.retriable


@pytest.mark.parametrize("topic", ["T", "Topic_1-a", "%RETRY%g", "a|b", "x" * 127])
def test_valid_topics(topic: str) -> None:
    check_topic(topic)


@pytest.mark.parametrize("topic", ["", "a b", "é", "x" * 128, "a/b", "a.b"])
def test_invalid_topics(topic: str) -> None:
    with pytest.raises(MQClientError):
        check_topic(topic)


def test_wire_properties_order_and_wait() -> None:
    m = Message("T", b"x", tags="A", keys="k", properties={"u": "1"}, wait_store_msg_ok=False)
    assert list(m.wire_properties().items()) == [("u", "1"), ("TAGS", "A"), ("KEYS", "k"), ("WAIT", "false")]


def test_user_properties_drop_system_ones() -> None:
    props = {"a": "1", "TAGS": "x", "UNIQ_KEY": "u", "MIN_OFFSET": "0", "CLUSTER": "c", "WAIT": "true"}
    assert user_properties(props) == {"a": "1"}
