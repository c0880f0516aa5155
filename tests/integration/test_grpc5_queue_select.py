"""The 5.x endpoint picks each send's queue itself, as Apache's proxy does: the ``queue_id`` a client
leaves at 0 is ignored, plain messages go round-robin over the topic's write queues, a message group's
messages all go to the queue its hash names (the one Apache's proxy would pick) in their order, and a
batch stays in one queue."""

from __future__ import annotations

import uuid
from collections import defaultdict

import grpc
import pytest

from pyrocketmq.broker.proxy.pb import definition_pb2 as pb, service_pb2 as spb
from pyrocketmq.broker.proxy.queue_select import group_queue
from pyrocketmq.remoting.code import ResponseCode
from pyrocketmq.remoting.message import Prop, decode_messages
from tests.helpers.cluster import free_port
from tests.integration import wire
from tests.integration.procs import start_broker, start_namesrv
from tests.integration.wire import invoke_once

SEND = "/apache.rocketmq.v2.MessagingService/SendMessage"


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grpc5-queues")
    ns = start_namesrv(tmp)
    port = free_port()
    broker = None
    try:
        broker = start_broker(tmp, ns.addr, grpcListenPort=port)
        yield broker.addr, f"127.0.0.1:{port}"
    finally:
        if broker is not None:
            broker.stop()
        ns.stop()


def _message(topic: str, body: str, group: str | None = None) -> pb.Message:
    m = pb.Message(topic=pb.Resource(name=topic), body=body.encode())
    sp = m.system_properties
    sp.message_id = uuid.uuid4().hex.upper()
    sp.message_type = pb.FIFO if group else pb.NORMAL
    sp.queue_id = 0  # what the official non-Java clients send
    if group:
        sp.message_group = group
    return m


def _send(channel: grpc.Channel, *messages: pb.Message) -> None:
    fn = channel.unary_unary(SEND, request_serializer=spb.SendMessageRequest.SerializeToString,
                             response_deserializer=spb.SendMessageResponse.FromString)
    request = spb.SendMessageRequest(messages=messages)
    resp = fn(request, metadata=[("x-mq-client-id", "it-queues")], timeout=10)
    assert resp.status.code == pb.OK, resp.status


def _stored(addr: str, topic: str, queues: int) -> dict[int, list[tuple[str, str]]]:
    """Each queue's (body, message group) pairs, in queue order."""
    out: dict[int, list[tuple[str, str]]] = {}
    for q in range(queues):
        resp = invoke_once(addr, wire.pull(topic, q, 0, group="queue-reader", max_nums=64))
        msgs = decode_messages(resp.body) if resp.code == ResponseCode.SUCCESS else []
        out[q] = [(m.body.decode(), m.properties.get(Prop.SHARDING_KEY, "")) for m in msgs]
    return out


def test_plain_sends_spread_round_robin_over_the_write_queues(endpoint):
    addr, grpc_addr = endpoint
    invoke_once(addr, wire.create_topic("Spread5", 3))
    with grpc.insecure_channel(grpc_addr) as channel:
        for i in range(40):
            _send(channel, _message("Spread5", f"m{i}"))
    stored = _stored(addr, "Spread5", 3)
    counts = sorted(len(v) for v in stored.values())
    assert sum(counts) == 40
    assert counts[0] >= 40 // 3 and counts[-1] <= 40 // 3 + 1, stored
    # round-robin: consecutive sends go to consecutive queues
    queue_of = {body: q for q, items in stored.items() for body, _ in items}
    assert all(queue_of[f"m{i + 1}"] == (queue_of[f"m{i}"] + 1) % 3 for i in range(39))


def test_each_message_group_keeps_one_queue_and_its_order(endpoint):
    addr, grpc_addr = endpoint
    invoke_once(addr, wire.create_topic("Groups5", 4))
    groups = ["g1", "order-42", "order-7", "customer-1001"]
    with grpc.insecure_channel(grpc_addr) as channel:
        for i in range(5):
            for g in groups:
                _send(channel, _message("Groups5", f"{g}#{i}", group=g))
    stored = _stored(addr, "Groups5", 4)
    seen: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for q, items in stored.items():
        for body, group in items:
            seen[group].append((q, body))
    assert sorted(seen) == sorted(groups)
    for g in groups:
        assert {q for q, _ in seen[g]} == {group_queue(g, 4)}, seen[g]  # the queue Apache's proxy picks
        assert [body for _, body in seen[g]] == [f"{g}#{i}" for i in range(5)]


def test_a_batch_goes_to_one_queue(endpoint):
    addr, grpc_addr = endpoint
    invoke_once(addr, wire.create_topic("Batch5", 4))
    with grpc.insecure_channel(grpc_addr) as channel:
        for b in range(4):
            _send(channel, *(_message("Batch5", f"b{b}-{i}") for i in range(3)))
    stored = _stored(addr, "Batch5", 4)
    for b in range(4):
        queues = {q for q, items in stored.items() for body, _ in items if body.startswith(f"b{b}-")}
        assert len(queues) == 1
    assert all(len(items) == 3 for items in stored.values()), stored  # four batches, four queues
