"""The official RocketMQ 5.x Java producer (rocketmq-client-java 5.0.8, gRPC) against the broker's 5.x
endpoint: sync and async sends, FIFO message groups, delay to a timestamp, transaction commit and
rollback, and the broker's check-back of a transaction whose producer died (answered by another
producer of the topic over its Telemetry stream). Every outcome is judged on what the broker stored,
read back with 4.x pulls."""

from __future__ import annotations

import time

import pytest

from tests.conformance.grpc5 import GrpcCluster, cluster_fixture, make_topic, read_topic

pytestmark = pytest.mark.conformance


# transactions: check every second, a half message is checked once 3 s old
cluster = cluster_fixture("grpc5-java", transactionCheckInterval=1000, transactionTimeOut=3000)


def _send(java5, cluster: GrpcCluster, topic: str, mode: str, count: int, extra: object = 0) -> dict:
    out = java5.run("Producer5Scenario", [cluster.endpoint, topic, mode, count, extra], timeout=120).json()
    assert out["errors"] == [], (out, cluster.log_tails())
    return out


@pytest.mark.parametrize("mode", ["normal", "async"])
def test_sends_are_stored_with_their_tag_keys_id_and_properties(java5, cluster, mode):
    topic = f"J5{mode.capitalize()}"
    make_topic(cluster, topic)
    out = _send(java5, cluster, topic, mode, 10)
    ids = {s["idx"]: s["messageId"] for s in out["sent"]}
    assert sorted(ids) == list(range(10))
    stored = read_topic(cluster.broker.addr, topic)
    assert len(stored) == 10, [m.properties for m in stored]
    for m in stored:
        idx = int(m.properties["idx"])
        assert m.properties["UNIQ_KEY"] == ids[idx]  # the 5.x message id is the 4.x unique key
        assert m.tags == "TagA" and m.keys == [f"k-{idx}"] and m.body == f"m-{idx}".encode()
        assert "TRAN_MSG" not in m.properties and "__SHARDINGKEY" not in m.properties


def test_fifo_groups_keep_their_order_in_one_queue(java5, cluster):
    topic = "J5Fifo"
    make_topic(cluster, topic)
    _send(java5, cluster, topic, "fifo", 30, 3)
    stored = read_topic(cluster.broker.addr, topic)
    assert len(stored) == 30
    by_group: dict[str, list] = {}
    for m in sorted(stored, key=lambda m: (m.queue_id, m.queue_offset)):
        by_group.setdefault(m.properties["__SHARDINGKEY"], []).append(m)
    assert sorted(by_group) == ["g-0", "g-1", "g-2"]
    for group, msgs in by_group.items():
        assert len({m.queue_id for m in msgs}) == 1, group  # one group, one queue
        idx = [int(m.properties["idx"]) for m in msgs]
        assert idx == sorted(idx) and all(i % 3 == int(group[-1]) for i in idx), (group, idx)


def test_delay_to_a_timestamp_is_held_until_then(java5, cluster):
    topic = "J5Delay"
    make_topic(cluster, topic)
    delay_ms = 2500
    _send(java5, cluster, topic, "delay", 5, delay_ms)
    assert read_topic(cluster.broker.addr, topic) == []  # nothing visible before its time
    deadline = time.time() + 15
    stored = []
    while time.time() < deadline and len(stored) < 5:
        time.sleep(0.3)
        stored = read_topic(cluster.broker.addr, topic)
    assert len(stored) == 5, cluster.log_tails()
    for m in stored:
        due = int(m.properties["TIMER_OUT_MS"])
        assert m.store_timestamp >= due  # re-stored in its topic no earlier than asked
        assert delay_ms - 1000 <= due - m.born_timestamp <= delay_ms + 1000, (due, m.born_timestamp)


def test_transaction_commit_is_delivered_and_rollback_is_not(java5, cluster):
    make_topic(cluster, "J5TxCommit")
    make_topic(cluster, "J5TxRollback")
    committed = _send(java5, cluster, "J5TxCommit", "tx-commit", 5)
    _send(java5, cluster, "J5TxRollback", "tx-rollback", 5)
    stored = read_topic(cluster.broker.addr, "J5TxCommit")
    assert sorted(m.properties["UNIQ_KEY"] for m in stored) == sorted(
        s["messageId"] for s in committed["sent"]
    )
    time.sleep(5)  # past the check time: a rolled back half message must not come back by a check
    assert read_topic(cluster.broker.addr, "J5TxRollback") == []


def test_orphaned_transaction_is_checked_back_through_another_producer(java5, cluster):
    topic = "J5TxOrphan"
    make_topic(cluster, topic)
    orphaned = _send(java5, cluster, topic, "tx-orphan", 3)  # the JVM halts with 3 open transactions
    ids = sorted(s["messageId"] for s in orphaned["sent"])
    assert read_topic(cluster.broker.addr, topic) == []
    checker = _send(java5, cluster, topic, "tx-checker", 3, 30)
    assert sorted(set(checker["checked"])) == ids, (checker, cluster.log_tails())
    deadline = time.time() + 5
    stored = []
    while time.time() < deadline and len(stored) < 3:
        stored = read_topic(cluster.broker.addr, topic)
        time.sleep(0.2)
    assert sorted(m.properties["UNIQ_KEY"] for m in stored) == ids
