"""The official RocketMQ 5.x Java producer (rocketmq-client-java 5.0.8) recalls a delayed message
through the broker's 5.x endpoint: the send's receipt carries a recall handle (a normal message's
none), ``Producer.recallMessage`` answers the recalled message's id, a made-up handle is refused in
Apache's words, and a SimpleConsumer on the topic receives the unrecalled delayed message and the
normal one, never the recalled one (nor is it ever stored in the topic)."""

from __future__ import annotations

import pytest

from pyrocketmq.remoting.recall_handle import decode_recall_handle
from tests.conformance.grpc5 import cluster_fixture, make_topic, read_topic

pytestmark = pytest.mark.conformance


cluster = cluster_fixture("grpc5-recall", recallMessageEnable="true")


def test_a_recalled_delayed_message_never_reaches_a_simple_consumer(java5, cluster):
    topic, group = "J5Recall", "J5RecallGroup"
    make_topic(cluster, topic)
    out = java5.run("Recall5Scenario", [cluster.endpoint, topic, group, 3000, 8], timeout=120).json()
    assert out["errors"] == [], (out, cluster.log_tails())
    handle = decode_recall_handle(out["recallHandle"])
    assert (handle.topic, handle.broker_name, handle.message_id) == (topic, "broker-a", out["recalledId"])
    assert decode_recall_handle(out["keptHandle"]).message_id == out["keptId"]
    assert out["normalHandle"] == ""  # a message without a delivery time cannot be recalled
    assert out["recallReceiptId"] == out["recalledId"]
    assert "recall handle is invalid" in out["badRecall"], out["badRecall"]
    received = {m["body"]: m for m in out["received"]}
    assert "recalled" not in received, (out, cluster.log_tails())
    assert sorted(received) == ["kept", "normal"], (out, cluster.log_tails())
    assert received["kept"]["messageId"] == out["keptId"]
    assert sorted(m.body.decode() for m in read_topic(cluster.broker.addr, topic)) == ["kept", "normal"]
