"""Topic and group names are checked as Java checks them: the whole name against
``^[%|a-zA-Z0-9_-]+$`` (a trailing newline is no exception), topics up to 127 characters, groups
up to 255, with Apache's remarks; every checker in the code base goes through the one rule."""

from __future__ import annotations

import pytest

from pyrocketmq.client.errors import MQClientError
from pyrocketmq.client.message import check_topic
from pyrocketmq.operator.model import ConsumerGroupModel, SpecError, TopicModel
from pyrocketmq.remoting.body import ConsumerData, HeartbeatData, ProducerData, SubscriptionData, TopicConfig
from pyrocketmq.remoting.client_bodies import SubscriptionGroupConfig
from pyrocketmq.remoting.names import check_broker_name, check_group_name, check_topic_name, is_legal_name
from pyrocketmq.server.config_checks import group_config_problem, heartbeat_problem, topic_config_problem

TOPIC_ILLEGAL = "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
BAD = [
    "Orders\n",
    "Orders\r\n",
    "\nOrders",
    "Ord ers",
    "Orders\x00",
    "a/b",
    "a.b",
    "caf\u00e9",
    "Orders\u0660",
    "\uff21",
]


@pytest.mark.parametrize("name", BAD)
def test_a_name_must_match_the_pattern_as_a_whole(name):
    assert not is_legal_name(name)
    assert check_topic_name(name) == TOPIC_ILLEGAL
    assert (
        check_group_name(name)
        == f"the specified group[{name}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    )


@pytest.mark.parametrize("name", ["Orders", "%RETRY%g", "%DLQ%g", "a|b", "A-z_0-9", "x" * 127])
def test_valid_names_pass(name):
    assert is_legal_name(name)
    assert check_topic_name(name) is None and check_group_name(name) is None


def test_apache_remarks_for_blank_and_long_names():
    assert (
        check_topic_name("")
        == check_topic_name("  ")
        == check_topic_name(None)
        == "The specified topic is blank."
    )
    assert check_topic_name("x" * 128) == "The specified topic is longer than topic max length."
    assert check_group_name("") == check_group_name(None) == "the specified group is blank"
    assert check_group_name("g" * 255) is None
    assert check_group_name("g" * 256) == "the specified group is longer than group max length 255."


def test_a_huge_name_is_not_echoed_back():
    assert len(check_group_name("\n" * 200) or "") < 300
    assert len(check_topic_name("\n" * 100_000) or "") < 300


@pytest.mark.parametrize("name", ["Orders\n", "x" * 128])
def test_every_topic_checker_refuses(name):
    assert topic_config_problem(TopicConfig(name, 4, 4, 6)) is not None
    heartbeat = HeartbeatData(client_id="c", consumer_data_set=[
        ConsumerData(group_name="g", subscription_data_set=(SubscriptionData.build(name, "*", 1),))])
    assert "subscribes" in (heartbeat_problem(heartbeat) or "")
    with pytest.raises(MQClientError):
        check_topic(name)
    with pytest.raises(SpecError):
        TopicModel.from_body({"metadata": {"name": "t", "namespace": "n"}, "spec": {"topicName": name}})


@pytest.mark.parametrize("name", ["g\n", "g" * 256, ""])
def test_every_group_checker_refuses(name):
    assert group_config_problem(SubscriptionGroupConfig(group_name=name)) is not None
    assert "consumer group" in (heartbeat_problem(HeartbeatData(client_id="c", consumer_data_set=[
        ConsumerData(group_name=name)])) or "")
    assert "producer group" in (heartbeat_problem(HeartbeatData(client_id="c", producer_data_set=[
        ProducerData(group_name=name)])) or "")
    with pytest.raises(SpecError):
        ConsumerGroupModel.from_body(
            {"metadata": {"name": "g", "namespace": "n"}, "spec": {"groupName": name or "\n"}}
        )


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("broker-a", True),
        ("my-cluster-broker-0", True),
        ("rmq.broker-a", True),
        ("DefaultCluster", True),
        ("b" * 127, True),
        ("b" * 128, False),
        ("", False),
        ("broker-a\n", False),
        ("a b", False),
        ("a:b", False),
        ("a/b", False),
    ],
)
def test_broker_and_cluster_names(name, ok):
    assert (check_broker_name(name) is None) is ok
    assert (check_broker_name(name, "clusterName") is None) is ok
