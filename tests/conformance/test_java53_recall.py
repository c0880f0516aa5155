"""Apache RocketMQ 5.3's own 4.x-protocol producer (rocketmq-client 5.3.3, ``DefaultMQProducer``)
recalls a timer message through RECALL_MESSAGE (370): its ``SendResult`` carries the recall handle
(a normal message's none), ``recallMessage`` answers the message id, a handle of another topic gets
the broker's ILLEGAL_OPERATION (604) "recall failed, topic not match", and only the unrecalled
messages are ever stored in the topic."""

from __future__ import annotations

import time

import pytest

from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.recall_handle import decode_recall_handle
from tests.conformance import jvm, maven, probe
from tests.conformance.conftest import missing_prerequisite
from tests.conformance.grpc5 import admin, read_topic
from tests.integration import wire
from tests.integration.procs import start_broker, start_namesrv

pytestmark = pytest.mark.conformance


@pytest.fixture(scope="module")
def java53(tmp_path_factory: pytest.TempPathFactory) -> jvm.JavaPrograms:
    try:
        jvm.java_executable()
        programs = jvm.JavaPrograms(
            maven.resolve(maven.TOOLS53),
            log_dir=tmp_path_factory.mktemp("java53-logs"),
            sources=jvm.JAVA_SOURCES.with_name("java53"),
        )
        programs.compile()
    except maven.PrerequisiteMissing as exc:
        missing_prerequisite(str(exc))
        raise
    return programs


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("java53-recall")
    ns = start_namesrv(tmp)
    broker = None
    try:
        broker = start_broker(tmp, ns.addr, recallMessageEnable="true")
        yield ns, broker
    finally:
        if broker is not None:
            broker.stop()
        ns.stop()


def test_a_recalled_timer_message_is_never_stored_in_its_topic(java53, servers):
    ns, broker = servers
    topic = "J53Recall"
    assert admin(broker.addr, wire.create_topic(topic, 1)).code == ResponseCode.SUCCESS
    probe.wait_for_route(ns.addr, topic)
    out = java53.run("Recall53Scenario", [ns.addr, topic, 3000], timeout=120).json()
    assert out["errors"] == [], out
    handle = decode_recall_handle(out["recallHandle"])
    assert (handle.topic, handle.broker_name, handle.message_id) == (topic, "broker-a", out["recalledId"])
    assert out["normalHandle"] == "null"  # no handle for a message without a delivery time
    assert out["recalledAnswer"] == out["recalledId"]
    assert (out["wrongTopicCode"], out["wrongTopicRemark"]) == (
        ResponseCode.ILLEGAL_OPERATION,
        "recall failed, topic not match",
    )
    deadline, stored = time.time() + 20, []
    while time.time() < deadline and "kept" not in stored:
        time.sleep(0.3)
        stored = [m.body.decode() for m in read_topic(broker.addr, topic, queues=1)]
    time.sleep(1.0)
    assert sorted(m.body.decode() for m in read_topic(broker.addr, topic, queues=1)) == ["kept", "normal"]
