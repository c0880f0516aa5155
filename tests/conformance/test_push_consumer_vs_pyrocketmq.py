"""The unmodified Java ``DefaultMQPushConsumer`` (4.9.8) consuming from pyrocketmq's broker.

Concurrently: every message is consumed, and those the listener answers RECONSUME_LATER come back
through the broker (CONSUMER_SEND_MSG_BACK → ``%RETRY%<group>`` via a delay level) with
reconsumeTimes 1 — not by the client's local fallback: the redelivered copy is a different record
carrying RETRY_TOPIC and ORIGIN_MESSAGE_ID. Orderly (LOCK_BATCH_MQ before pulling): every message,
each queue in offset order. The broker runs with 1 s delay levels so retries come back quickly.
"""

from __future__ import annotations

import uuid
from collections import defaultdict

import pytest

from tests.conformance import probe
from tests.helpers.cluster import Cluster, start_pyrocketmq_cluster

pytestmark = pytest.mark.conformance

COUNT = 40
FAIL_EVERY = 5


@pytest.fixture(scope="module")
def short_delay_cluster(rocketmq_jars, tmp_path_factory):
    def registered(c: Cluster) -> None:
        probe.wait_for_route(c.namesrv_addr, "TBW102", timeout=30, alive=c.alive)

    cluster = start_pyrocketmq_cluster(
        tmp_path_factory.mktemp("pyrocketmq-push"),
        ready=registered,
        broker_overrides={"messageDelayLevel": " ".join(["1s"] * 18)},
    )
    try:
        yield cluster
    finally:
        cluster.stop()


def _produce(java, cluster: Cluster, topic: str) -> dict[str, dict]:
    produced = java.run("ProducerScenario", [cluster.namesrv_addr, topic, COUNT, "sync"], timeout=180).json()
    assert produced["errors"] == 0, produced["sent"][:3]
    return {str(s["idx"]): s for s in produced["sent"]}


def test_java_push_consumer_concurrently_with_a_retry(short_delay_cluster, java):
    cluster = short_delay_cluster
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"PushC_{suffix}", f"cg_push_c_{suffix}"
    sent = _produce(java, cluster, topic)
    result = java.run(
        "PushConsumerScenario",
        [cluster.namesrv_addr, topic, group, "concurrent", COUNT, 120, FAIL_EVERY],
        timeout=180,
    ).json()
    deliveries = result["deliveries"]
    assert not result["timedOut"], (
        f"timed out; {len(deliveries)} deliveries, failed {sorted(result['failed'])}"
    )
    by_idx: dict[str, list[dict]] = defaultdict(list)
    for d in deliveries:
        by_idx[d["userProperties"]["idx"]].append(d)
    assert set(by_idx) == set(sent)
    expect_failed = {i for i in sent if int(i) % FAIL_EVERY == 0}
    assert set(result["failed"]) == expect_failed
    for idx, s in sent.items():
        first = [d for d in by_idx[idx] if d["reconsumeTimes"] == 0]
        assert first, f"idx {idx}: never delivered with reconsumeTimes 0"
        assert first[0]["msgId"] == s["msgId"] and first[0]["topic"] == topic
        assert first[0]["bodySha1"] == s["bodySha1"]
        if idx not in expect_failed:
            continue
        again = [d for d in by_idx[idx] if d["reconsumeTimes"] == 1]
        assert again, f"idx {idx}: failed once but never came back with reconsumeTimes 1"
        r = again[0]
        assert r["topic"] == topic, "the client restores the topic from RETRY_TOPIC"
        assert r["properties"].get("RETRY_TOPIC") == topic
        assert r["properties"].get("ORIGIN_MESSAGE_ID"), (
            "redelivered by the client itself, not through the broker"
        )
        assert r["commitLogOffset"] != first[0]["commitLogOffset"]
        assert r["msgId"] == s["msgId"] and r["bodySha1"] == s["bodySha1"]
        assert r["userProperties"] == first[0]["userProperties"]
        assert r["storeHost"] == cluster.broker_addr
    assert not [d for d in deliveries if d["reconsumeTimes"] > 1]


def test_java_push_consumer_orderly(short_delay_cluster, java):
    cluster = short_delay_cluster
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"PushO_{suffix}", f"cg_push_o_{suffix}"
    sent = _produce(java, cluster, topic)
    result = java.run(
        "PushConsumerScenario", [cluster.namesrv_addr, topic, group, "orderly", COUNT, 120], timeout=180
    ).json()
    deliveries = result["deliveries"]
    assert not result["timedOut"], f"timed out after {len(deliveries)} deliveries"
    assert {d["userProperties"]["idx"] for d in deliveries} == set(sent)
    per_queue: dict[int, list[int]] = defaultdict(list)
    for d in deliveries:
        per_queue[d["queueId"]].append(d["queueOffset"])
    expected_queues = defaultdict(int)
    for s in sent.values():
        expected_queues[s["queueId"]] += 1
    for qid, offsets in per_queue.items():
        assert offsets == list(range(expected_queues[qid])), f"queue {qid} consumed out of order: {offsets}"


def test_java_push_consumer_rewound_by_the_java_admin(short_delay_cluster, java):
    """resetOffsetByTimestamp from DefaultMQAdminExt (222) while the push consumer runs: the broker
    tells it (220) and it consumes everything again from the start."""
    cluster = short_delay_cluster
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"PushR_{suffix}", f"cg_push_r_{suffix}"
    sent = _produce(java, cluster, topic)
    result = java.run(
        "PushConsumerScenario", [cluster.namesrv_addr, topic, group, "rewind", COUNT, 150], timeout=200
    ).json()
    assert result["reset"] == {f"{cluster.broker_name}/{q}": 0 for q in range(4)}
    # the Java admin's connection list (203) and running info relayed to the consumer (307)
    [conn] = result["connections"]
    assert conn["language"] == "JAVA" and conn["version"] > 0
    assert sorted(result["subscriptions"]) == sorted([topic, f"%RETRY%{group}"])
    running = result["runningInfo"]
    # the topic's 4 queues, plus the retry queue once the consumer's route for it is in
    assert running["consumeType"] == "CONSUME_PASSIVELY" and running["queues"] in (4, 5)
    assert sorted(running["topics"]) == sorted([topic, f"%RETRY%{group}"])
    assert not result["timedOut"], f"timed out after {len(result['deliveries'])} deliveries"
    counts: dict[str, int] = defaultdict(int)
    for d in result["deliveries"]:
        counts[d["userProperties"]["idx"]] += 1
    assert set(counts) == set(sent) and min(counts.values()) >= 2
