"""Our Python ``PushConsumer`` consuming what the unmodified Java producer sent — to an Apache RocketMQ
4.9.7 broker (the ground truth) and to ours.

- Concurrently, two members of one group, subscribed to ``TagA || TagB``: every matching message
  arrives (bodies, tags, keys and user properties as the Java producer set them), no other tag does;
  the group's queues are split between the members; one message answered RECONSUME_LATER comes back
  through the broker's ``%RETRY%<group>`` with reconsumeTimes 1 and its original topic.
- Orderly (LOCK_BATCH_MQ on the real broker lock table): every message, each queue in offset order.
- mqadmin's ``getConsumerRunningInfo`` (rocketmq-tools, fastjson) decodes the running info our
  consumer answers through the broker (GET_CONSUMER_RUNNING_INFO).

The Apache broker keeps its default delay levels, so the retry takes about 10 s (level 3).
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict

import pytest

from pyrocketmq.client import (
    ClientSettings,
    ConsumeResult,
    PushConsumerSettings,
    RebalanceSettings,
    SyncPushConsumer,
)

pytestmark = pytest.mark.conformance

COUNT = 60
WAIT = 90.0


@pytest.fixture(params=["apache", "pyrocketmq"])
def cluster(request):
    return request.getfixturevalue(f"{request.param}_cluster")


def _consumer(cluster, group: str, name: str, topic: str, expression: str, listener, orderly: bool = False):
    settings = PushConsumerSettings(consume_from="first", rebalance=RebalanceSettings(interval=2.0))
    c = SyncPushConsumer(group, cluster.namesrv_addr, settings, ClientSettings(instance_name=name))
    c.subscribe(topic, expression)
    c.register_listener(listener, orderly=orderly)
    return c


def _wait(cond, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        time.sleep(0.2)


def test_python_push_consumer_reads_what_java_sent(cluster, java):
    topic = f"PyPush_{cluster.kind}_{uuid.uuid4().hex[:8]}"
    sent = java.run("ProducerScenario", [cluster.namesrv_addr, topic, str(COUNT), "sync"], timeout=180).json()
    assert sent["errors"] == 0
    records = {r["idx"]: r for r in sent["sent"]}
    wanted = {i for i, r in records.items() if r["tags"] in ("TagA", "TagB")}

    got: dict[str, list] = defaultdict(list)
    failed_once: set[int] = set()

    def listener_for(name: str):
        def listener(msgs, ctx):
            for m in msgs:
                idx = int(m.properties["idx"])
                got[name].append(m)
                if idx == min(wanted) and idx not in failed_once:
                    failed_once.add(idx)
                    return ConsumeResult.RECONSUME_LATER
            return ConsumeResult.SUCCESS

        return listener

    group = f"cg_pypush_{uuid.uuid4().hex[:6]}"
    members = [
        _consumer(cluster, group, f"m{i}", topic, "TagA || TagB", listener_for(f"m{i}")) for i in range(2)
    ]
    try:
        for c in members:
            c.start()

        def all_in() -> bool:
            seen = [m for lst in got.values() for m in lst]
            back = [m for m in seen if int(m.properties["idx"]) == min(wanted) and m.reconsume_times == 1]
            return wanted <= {int(m.properties["idx"]) for m in seen} and bool(back)

        _wait(all_in, "every TagA/TagB message, and the retried one again")
        owned = [set(mq for mq in c.assignment() if mq.topic == topic) for c in members]
    finally:
        for c in members:
            c.shutdown()

    msgs = [m for lst in got.values() for m in lst]
    assert {m.tags for m in msgs} <= {"TagA", "TagB"}
    for m in msgs:
        rec = records[int(m.properties["idx"])]
        assert m.body == f"body-{rec['idx']}".encode()
        assert m.tags == rec["tags"] and m.keys == rec["keys"].split()
        assert m.properties["p-unicode"] == "h\u00e9llo"
        assert m.topic == topic
    retried = [m for m in msgs if int(m.properties["idx"]) == min(wanted)]
    assert {m.reconsume_times for m in retried} == {
        0,
        1,
    }  # the first try (maybe twice around a rebalance), the retry
    back = [m for m in retried if m.reconsume_times == 1]
    assert back[0].properties.get("RETRY_TOPIC") == topic and back[0].properties.get("ORIGIN_MESSAGE_ID")
    assert not owned[0] & owned[1] and owned[0] | owned[1], "the members split the topic's queues"


def test_python_orderly_push_consumer_on_the_broker_lock_table(cluster, java):
    topic = f"PyOrderly_{cluster.kind}_{uuid.uuid4().hex[:8]}"
    sent = java.run("ProducerScenario", [cluster.namesrv_addr, topic, str(COUNT), "sync"], timeout=180).json()
    assert sent["errors"] == 0
    per_queue: dict[int, list[int]] = defaultdict(list)

    def listener(msgs, ctx):
        for m in msgs:
            per_queue[m.queue_id].append(m.queue_offset)
        return ConsumeResult.SUCCESS

    c = _consumer(cluster, f"cg_pyorder_{uuid.uuid4().hex[:6]}", "o1", topic, "*", listener, orderly=True)
    try:
        c.start()
        _wait(lambda: sum(len(v) for v in per_queue.values()) >= COUNT, "every message, orderly")
    finally:
        c.shutdown()
    expected: dict[int, list[int]] = defaultdict(list)
    for r in sent["sent"]:
        expected[r["queueId"]].append(r["queueOffset"])
    for qid, offsets in per_queue.items():
        assert offsets == sorted(offsets), f"queue {qid} consumed out of order"
        assert offsets == sorted(expected[qid])


def test_mqadmin_reads_the_python_push_consumers_running_info(cluster, java):
    """GET_CONSUMER_RUNNING_INFO relayed by the broker and decoded by rocketmq-tools (fastjson)."""
    topic = f"PyInfo_{cluster.kind}_{uuid.uuid4().hex[:8]}"
    sent = java.run("ProducerScenario", [cluster.namesrv_addr, topic, "20", "sync"], timeout=180).json()
    assert sent["errors"] == 0
    got: list = []
    group = f"cg_pyinfo_{uuid.uuid4().hex[:6]}"
    c = _consumer(cluster, group, "info1", topic, "*", lambda msgs: got.extend(msgs) or ConsumeResult.SUCCESS)
    try:
        c.start()
        _wait(lambda: len(got) >= 20, "every message")
        client_id = c.consumer.instance.client_id
        info = java.run("RunningInfoScenario", [cluster.namesrv_addr, group, client_id], timeout=120).json()
    finally:
        c.shutdown()
    assert info["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    assert info["properties"]["PROP_CONSUMEORDERLY"] == "false"
    assert topic in info["subscriptions"] and f"%RETRY%{group}" in info["subscriptions"]
    mine = [q for q in info["queues"] if q["topic"] == topic]
    assert sorted(q["queueId"] for q in mine) == [0, 1, 2, 3]  # the auto-created topic's 4 queues, all owned
    committed = sum(q["commitOffset"] for q in mine)
    assert committed == 20, "the commit offsets Java decoded add up to the messages consumed"
    assert topic in info["statusTopics"]
