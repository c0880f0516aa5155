"""RecallMessage on the 5.x endpoint, with real processes and raw protobuf calls: a delayed message's
send answers a recall handle (a normal one's none); a recalled message is never delivered while
its unrecalled neighbour is; wrong handles get the status Apache's proxy gives
(INTERNAL_SERVER_ERROR with the broker's words); a recall after delivery is refused; a recall sent to
one broker's endpoint for a message another broker holds is forwarded there; and a recall outlives a
broker killed before it wrote its timer checkpoint."""

from __future__ import annotations

import time
import uuid

import grpc
import pytest

from pyrocketmq.broker.proxy.pb import definition_pb2 as pb, service_pb2 as spb
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.message import decode_messages
from pyrocketmq.remoting.recall_handle import RecallHandle, decode_recall_handle
from tests.helpers.cluster import free_port
from tests.integration import wire
from tests.integration.procs import start_broker, start_namesrv
from tests.integration.wire import invoke_once

SERVICE = "/apache.rocketmq.v2.MessagingService/"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grpc5-recall")
    ns = start_namesrv(tmp)
    started = []
    try:
        for name in ("broker-a", "broker-b"):
            port = free_port()
            broker = start_broker(tmp, ns.addr, name=name, grpcListenPort=port, recallMessageEnable="true")
            started.append((broker, f"127.0.0.1:{port}"))
        for topic in ("Recall5", "Other5", "Restart5"):
            assert invoke_once(started[0][0].addr, wire.create_topic(topic, 1)).code == ResponseCode.SUCCESS
        yield started
    finally:
        for broker, _ in started:
            broker.stop()
        ns.stop()


def _call(endpoint: str, rpc: str, request, response_type):
    with grpc.insecure_channel(endpoint) as channel:
        fn = channel.unary_unary(
            SERVICE + rpc,
            request_serializer=type(request).SerializeToString,
            response_deserializer=response_type.FromString,
        )
        return fn(request, metadata=[("x-mq-client-id", "it-recall")], timeout=10)


def _send(endpoint: str, topic: str, body: str, deliver_at_ms: int | None = None) -> spb.SendResultEntry:
    m = pb.Message(topic=pb.Resource(name=topic), body=body.encode())
    m.system_properties.message_id = uuid.uuid4().hex.upper()
    m.system_properties.message_type = pb.NORMAL if deliver_at_ms is None else pb.DELAY
    if deliver_at_ms is not None:
        m.system_properties.delivery_timestamp.FromMilliseconds(deliver_at_ms)
    resp = _call(endpoint, "SendMessage", spb.SendMessageRequest(messages=[m]), spb.SendMessageResponse)
    assert resp.status.code == pb.OK, resp
    assert resp.entries[0].message_id == m.system_properties.message_id
    return resp.entries[0]


def _recall(endpoint: str, topic: str, handle: str) -> spb.RecallMessageResponse:
    request = spb.RecallMessageRequest(topic=pb.Resource(name=topic), recall_handle=handle)
    return _call(endpoint, "RecallMessage", request, spb.RecallMessageResponse)


def _stored(addr: str, topic: str) -> list[str]:
    resp = invoke_once(addr, wire.pull(topic, 0, 0, group="recall-reader", max_nums=64))
    return [m.body.decode() for m in decode_messages(resp.body)] if resp.code == ResponseCode.SUCCESS else []


def _wait_for(addr: str, topic: str, body: str, timeout: float) -> list[str]:
    deadline, stored = time.time() + timeout, []
    while time.time() < deadline:
        stored = _stored(addr, topic)
        if body in stored:
            return stored
        time.sleep(0.3)
    raise AssertionError(f"{body} not delivered in {timeout} s: {stored}")


def _now_ms() -> int:
    return int(time.time() * 1000)


def test_a_recalled_message_is_never_delivered_and_its_neighbour_is(cluster):
    broker, endpoint = cluster[0]
    due = _now_ms() + 3_000
    recalled = _send(endpoint, "Recall5", "recalled", due)
    kept = _send(endpoint, "Recall5", "kept", due)
    normal = _send(endpoint, "Recall5", "normal")
    assert normal.recall_handle == ""  # only a delayed message can be recalled
    handle = decode_recall_handle(recalled.recall_handle)
    assert (handle.topic, handle.broker_name, handle.message_id) == (
        "Recall5",
        "broker-a",
        recalled.message_id,
    )
    assert handle.due_ms == due
    answer = _recall(endpoint, "Recall5", recalled.recall_handle)
    assert (answer.status.code, answer.message_id) == (pb.OK, recalled.message_id), answer
    stored = _wait_for(broker.addr, "Recall5", "kept", timeout=30)
    time.sleep(1.0)  # both were due at the same millisecond: the recalled one would be there by now
    assert sorted(_stored(broker.addr, "Recall5")) == ["kept", "normal"], stored
    late = _recall(endpoint, "Recall5", kept.recall_handle)  # delivered already
    assert (late.status.code, late.status.message) == (
        pb.INTERNAL_SERVER_ERROR,
        "recall failed, timestamp invalid",
    )


@pytest.mark.parametrize(
    ("topic", "handle", "code", "message"),
    [
        ("Recall5", "not-a-handle!", pb.INTERNAL_SERVER_ERROR, "recall handle is invalid"),
        ("Recall5", "", pb.INTERNAL_SERVER_ERROR, "recall handle is invalid"),
        (
            "Recall5",
            RecallHandle.of("Other5", "broker-a", 0, "X").encode(),
            pb.INTERNAL_SERVER_ERROR,
            "recall failed, topic not match",
        ),
        (
            "Recall5",
            RecallHandle.of("Recall5", "broker-z", 0, "X").encode(),
            pb.INTERNAL_SERVER_ERROR,
            "recall failed, broker service not available",
        ),
        (
            "NoSuchTopic5",
            RecallHandle.of("NoSuchTopic5", "broker-a", 0, "X").encode(),
            pb.TOPIC_NOT_FOUND,
            "recall failed, the topic[NoSuchTopic5] not exist",
        ),
        ("rmq_sys_wheel_timer", "x", pb.ILLEGAL_TOPIC, "cannot access system topic"),
    ],
)
def test_wrong_handles_get_apaches_answers(cluster, topic, handle, code, message):
    _, endpoint = cluster[0]
    answer = _recall(endpoint, topic, handle)
    assert (answer.status.code, answer.status.message, answer.message_id) == (code, message, "")


def test_a_recall_for_another_broker_is_forwarded_to_it(cluster):
    (_, endpoint_a), (broker_b, endpoint_b) = cluster
    assert invoke_once(broker_b.addr, wire.create_topic("Forward5", 1)).code == ResponseCode.SUCCESS
    route_request = spb.QueryRouteRequest(topic=pb.Resource(name="Forward5"))
    deadline = time.time() + 30
    while time.time() < deadline:  # broker-a learns where broker-b is from the topic's route
        route = _call(endpoint_a, "QueryRoute", route_request, spb.QueryRouteResponse)
        if any(q.broker.name == "broker-b" for q in route.message_queues):
            break
        time.sleep(0.3)
    due = _now_ms() + 3_000
    recalled = _send(endpoint_b, "Forward5", "recalled", due)
    _send(endpoint_b, "Forward5", "kept", due)
    assert decode_recall_handle(recalled.recall_handle).broker_name == "broker-b"
    answer = _recall(endpoint_a, "Forward5", recalled.recall_handle)
    assert (answer.status.code, answer.message_id) == (pb.OK, recalled.message_id), answer
    _wait_for(broker_b.addr, "Forward5", "kept", timeout=30)
    time.sleep(1.0)
    assert _stored(broker_b.addr, "Forward5") == ["kept"]


def test_a_recall_outlives_a_broker_killed_before_its_checkpoint(cluster):
    broker, endpoint = cluster[0]
    due = _now_ms() + 12_000  # time for a restart on a busy machine
    recalled = _send(endpoint, "Restart5", "recalled", due)
    _send(endpoint, "Restart5", "kept", due + 1)
    assert _recall(endpoint, "Restart5", recalled.recall_handle).status.code == pb.OK
    broker.kill9()  # the timer checkpoint is written every 10 s: the recall is only in the commitlog
    broker.start()
    _wait_for(broker.addr, "Restart5", "kept", timeout=40)
    time.sleep(1.0)
    assert _stored(broker.addr, "Restart5") == ["kept"]
