"""Allocation strategies: grids of Java's results (AllocateMessageQueueAveragely & co., 4.9)."""

from __future__ import annotations

import pytest

from pyrocketmq.client.allocate import (
    HashRing,
    allocate_averagely,
    allocate_averagely_by_circle,
    allocate_by_config,
    allocate_consistent_hash,
    java_mq_string,
    md5_hash,
    pick,
    strategy_for,
)
from pyrocketmq.remoting.body import MessageQueue

QS = [MessageQueue("T", "broker-a", i) for i in range(8)]


def ids(n: int) -> list[str]:
    return [f"c{i}" for i in range(n)]


def split(strategy, queues, consumers):
    return [[q.queue_id for q in strategy("g", c, queues, consumers)] for c in consumers]


# Results of Java's formulas (mod = n % m; the first `mod` consumers take one more, consecutive).
@pytest.mark.parametrize(
    ("nq", "nc", "expected"),
    [
        (8, 1, [[0, 1, 2, 3, 4, 5, 6, 7]]),
        (8, 2, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        (8, 3, [[0, 1, 2], [3, 4, 5], [6, 7]]),
        (8, 5, [[0, 1], [2, 3], [4, 5], [6], [7]]),
        (8, 8, [[0], [1], [2], [3], [4], [5], [6], [7]]),
        (8, 10, [[0], [1], [2], [3], [4], [5], [6], [7], [], []]),
        (3, 2, [[0, 1], [2]]),
        (1, 3, [[0], [], []]),
    ],
)
def test_averagely_grid(nq, nc, expected):
    assert split(allocate_averagely, QS[:nq], ids(nc)) == expected


@pytest.mark.parametrize(
    ("nq", "nc", "expected"),
    [
        (8, 2, [[0, 2, 4, 6], [1, 3, 5, 7]]),
        (8, 3, [[0, 3, 6], [1, 4, 7], [2, 5]]),
        (8, 5, [[0, 5], [1, 6], [2, 7], [3], [4]]),
        (8, 10, [[0], [1], [2], [3], [4], [5], [6], [7], [], []]),
        (1, 3, [[0], [], []]),
    ],
)
def test_averagely_by_circle_grid(nq, nc, expected):
    assert split(allocate_averagely_by_circle, QS[:nq], ids(nc)) == expected


@pytest.mark.parametrize(
    "strategy", [allocate_averagely, allocate_averagely_by_circle, allocate_consistent_hash]
)
def test_unknown_consumer_or_empty_input_gets_nothing(strategy):
    assert strategy("g", "stranger", QS, ids(3)) == []
    assert strategy("g", "c0", [], ids(3)) == []
    assert strategy("g", "c0", QS, []) == []


@pytest.mark.parametrize("nc", [1, 2, 3, 4, 7])
@pytest.mark.parametrize(
    "strategy", [allocate_averagely, allocate_averagely_by_circle, allocate_consistent_hash]
)
def test_every_queue_exactly_once(strategy, nc):
    consumers = [f"127.0.0.1@{i}#x" for i in range(nc)]
    got = [q for c in consumers for q in strategy("g", c, QS, consumers)]
    assert sorted(got) == QS


def test_java_hash_inputs():
    assert (
        java_mq_string(MessageQueue("T", "broker-a", 3))
        == "MessageQueue [topic=T, brokerName=broker-a, queueId=3]"
    )
    # MD5("abc") = 900150983cd24fb0...: the first four bytes, unsigned
    assert md5_hash("abc") == 0x90015098


def test_consistent_hash_moves_only_the_leavers_queues():
    consumers = ["a@1", "b@2", "c@3"]
    before = {c: set(allocate_consistent_hash("g", c, QS * 1, consumers)) for c in consumers}
    after = {c: set(allocate_consistent_hash("g", c, QS, ["a@1", "c@3"])) for c in ["a@1", "c@3"]}
    for c in ["a@1", "c@3"]:
        assert before[c] <= after[c]


def test_hash_ring_routes_to_the_next_point_and_wraps():
    ring = HashRing(["x"], 1)
    assert ring.route("anything") == "x"
    assert HashRing([], 10).route("k") is None


def test_by_config_and_pick_sorts():
    cfg = [QS[5], QS[1]]
    assert allocate_by_config(cfg)("g", "anyone", QS, ids(2)) == cfg
    assert pick(allocate_averagely, "g", "c1", list(reversed(QS)), ["c1", "c0"]) == QS[4:]
    assert strategy_for("config", config_queues=cfg)("g", "c", [], []) == cfg
    with pytest.raises(ValueError):
        strategy_for("random")


# Recorded from Apache RocketMQ 4.9.7's own strategy classes (AllocateMessageQueueAveragely,
# ...AveragelyByCircle, ...ConsistentHash) on 2 brokers x 4 queues of "TopicTest" and client ids
# "192.168.0.<10+i>@<1000+7i>#<31i>"; "a3" is broker-a queue 3.
@pytest.mark.parametrize(
    ("name", "n", "expected"),
    [
        ("averagely", 1, [['a0', 'a1', 'a2', 'a3', 'b0', 'b1', 'b2', 'b3']]),
        ("averagely", 2, [['a0', 'a1', 'a2', 'a3'], ['b0', 'b1', 'b2', 'b3']]),
        ("averagely", 3, [['a0', 'a1', 'a2'], ['a3', 'b0', 'b1'], ['b2', 'b3']]),
        ("averagely", 4, [['a0', 'a1'], ['a2', 'a3'], ['b0', 'b1'], ['b2', 'b3']]),
        ("averagely", 5, [['a0', 'a1'], ['a2', 'a3'], ['b0', 'b1'], ['b2'], ['b3']]),
        ("averagely_by_circle", 1, [['a0', 'a1', 'a2', 'a3', 'b0', 'b1', 'b2', 'b3']]),
        ("averagely_by_circle", 2, [['a0', 'a2', 'b0', 'b2'], ['a1', 'a3', 'b1', 'b3']]),
        ("averagely_by_circle", 3, [['a0', 'a3', 'b2'], ['a1', 'b0', 'b3'], ['a2', 'b1']]),
        ("averagely_by_circle", 4, [['a0', 'b0'], ['a1', 'b1'], ['a2', 'b2'], ['a3', 'b3']]),
        ("averagely_by_circle", 5, [['a0', 'b1'], ['a1', 'b2'], ['a2', 'b3'], ['a3'], ['b0']]),
        ("consistent_hash", 1, [['a0', 'a1', 'a2', 'a3', 'b0', 'b1', 'b2', 'b3']]),
        ("consistent_hash", 2, [['a0', 'a3', 'b0', 'b1', 'b2'], ['a1', 'a2', 'b3']]),
        ("consistent_hash", 3, [['a0', 'a3', 'b0', 'b1', 'b2'], ['a1', 'b3'], ['a2']]),
        ("consistent_hash", 4, [['a0', 'a3', 'b0', 'b1', 'b2'], ['a1'], ['a2'], ['b3']]),
        ("consistent_hash", 5, [['a0', 'a3', 'b0', 'b1'], ['a1'], [], ['b3'], ['a2', 'b2']]),
    ],
)
def test_matches_java_grid(name, n, expected):
    mqs = [MessageQueue("TopicTest", b, i) for b in ("broker-a", "broker-b") for i in range(4)]
    cids = sorted(f"192.168.0.{10 + i}@{1000 + 7 * i}#{31 * i}" for i in range(n))
    strategy = strategy_for(name)
    got = [[f"{q.broker_name[7:]}{q.queue_id}" for q in pick(strategy, "g", c, mqs, cids)] for c in cids]
    assert got == expected
