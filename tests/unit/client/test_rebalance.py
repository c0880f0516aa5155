"""Rebalance decisions: allocation per message model, the table diff, where new queues start."""

from __future__ import annotations

import pytest

from pyrocketmq.client.allocate import allocate_averagely
from pyrocketmq.client.rebalance import allocate_topic, not_subscribed, plan, retry_topic, start_position
from pyrocketmq.remoting.body import MessageQueue


def mq(i: int, topic: str = "T") -> MessageQueue:
    return MessageQueue(topic, "broker-a", i)


def test_broadcasting_takes_every_queue_and_clustering_needs_members():
    qs = [mq(i) for i in (3, 1, 2, 0)]
    assert allocate_topic("BROADCASTING", allocate_averagely, "g", "c", qs, None) == sorted(qs)
    assert allocate_topic("CLUSTERING", allocate_averagely, "g", "c", qs, None) is None
    assert allocate_topic("CLUSTERING", allocate_averagely, "g", "c", qs, []) is None
    assert allocate_topic("CLUSTERING", allocate_averagely, "g", "b", qs, ["b", "a"]) == [mq(2), mq(3)]


@pytest.mark.parametrize(
    ("owned", "allocated", "stalled", "add", "remove"),
    [
        ([], [0, 1, 2], [], [0, 1, 2], []),
        ([0, 1, 2], [0, 1, 2], [], [], []),
        ([0, 1, 2, 3], [0, 1], [], [], [2, 3]),
        ([0, 1], [1, 2], [], [2], [0]),
        ([0, 1], [0, 1], [1], [1], [1]),  # a stalled queue is replaced
        ([0, 1], [0], [1], [], [1]),
    ],
)
def test_plan_grid(owned, allocated, stalled, add, remove):
    other = mq(0, "Other")
    p = plan("T", [mq(i) for i in owned] + [other], [mq(i) for i in allocated], [mq(i) for i in stalled])
    assert [q.queue_id for q in p.add] == add
    assert [q.queue_id for q in p.remove] == remove
    assert p.changed == bool(add or remove)


def test_not_subscribed_and_retry_topic():
    assert not_subscribed([mq(0), mq(1, "Gone")], {"T"}) == [mq(1, "Gone")]
    assert retry_topic("cg") == "%RETRY%cg"


@pytest.mark.parametrize(
    ("consume_from", "stored", "topic", "expected"),
    [
        ("last", 42, "T", 42),
        ("first", 42, "T", 42),
        ("timestamp", 0, "T", 0),
        ("last", -1, "T", "max"),
        ("last", -1, "%RETRY%g", 0),
        ("first", -1, "T", "min"),
        ("first", -1, "%RETRY%g", "min"),
        ("timestamp", -1, "T", "timestamp"),
        ("timestamp", -1, "%RETRY%g", "max"),
    ],
)
def test_start_position_grid(consume_from, stored, topic, expected):
    assert start_position(consume_from, stored, topic) == expected
