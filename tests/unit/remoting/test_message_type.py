"""Topic message types without a broker: what a message is, what a topic takes, the attribute syntax."""

from __future__ import annotations

import pytest

from pyrocketmq.remoting.body import TopicConfig, TopicConfigSerializeWrapper
from pyrocketmq.remoting.message_type import (
    AttributeRefused,
    format_attributes,
    message_type,
    parse_attributes,
    type_problem,
)


@pytest.mark.parametrize(("props", "kind"), [
    ({}, "NORMAL"), ({"TRAN_MSG": "true", "DELAY": "3"}, "TRANSACTION"), ({"DELAY": "3"}, "DELAY"),
    ({"DELAY": "0"}, "NORMAL"), ({"TIMER_DELIVER_MS": "1700000000000"}, "DELAY"),
    ({"__SHARDINGKEY": "g1"}, "FIFO"),
    ({"TRAN_MSG": "false"}, "NORMAL"),
])  # fmt: skip
def test_what_a_message_is(props, kind):
    assert message_type(props) == kind


def test_what_a_topic_takes():
    assert (
        type_problem("T", None, {"DELAY": "2"}) is None
        and type_problem("T", "MIXED", {"TRAN_MSG": "true"}) is None
    )
    assert type_problem("T", "FIFO", {}) is None and type_problem("T", "FIFO", {"__SHARDINGKEY": "a"}) is None
    assert "takes DELAY messages, not NORMAL ones" in type_problem("T", "DELAY", {})
    assert "takes NORMAL messages, not TRANSACTION ones" in type_problem("T", "NORMAL", {"TRAN_MSG": "true"})
    assert type_problem("T", "TRANSACTION", {"TRAN_MSG": "true"}) is None


def test_attribute_syntax():
    assert parse_attributes("+message.type=FIFO", {}) == {"message.type": "FIFO"}
    assert parse_attributes("-message.type", {"message.type": "FIFO"}) == {}
    assert format_attributes({"message.type": "DELAY"}) == "+message.type=DELAY"
    for bad, words in (("message.type=FIFO", r"use \+key=value"), ("+message.type=LIFO", "use one of"),
                       ("+queue.type=x", "not supported"), ("-message.type=FIFO", r"use \+key=value")):
        with pytest.raises(AttributeRefused, match=words):
            parse_attributes(bad, {})


def test_topic_json_carries_attributes_only_when_set():
    plain = TopicConfig("T", 4, 4, 6)
    assert "attributes" not in plain.to_dict()
    typed = TopicConfig("T", 4, 4, 6, attributes=(("message.type", "FIFO"),))
    wrapper = TopicConfigSerializeWrapper({"T": typed, "P": plain})
    back = TopicConfigSerializeWrapper.from_json(wrapper.to_json()).topic_config_table
    assert (
        back["T"].message_type == "FIFO"
        and back["P"].message_type is None
        and back == {"T": typed, "P": plain}
    )
