"""The 5.x gRPC endpoint with real processes and raw protobuf calls: routes name every broker's own
gRPC endpoint (announced to the name server), a typed topic accepts only its type, and bad requests
get the status codes the 5.x clients expect."""

from __future__ import annotations

import time
import uuid

import grpc
import pytest

from pyrocketmq.broker.proxy.pb import definition_pb2 as pb, service_pb2 as spb
from pyrocketmq.remoting.code import ResponseCode
from tests.helpers.cluster import free_port
from tests.integration import wire
from tests.integration.procs import start_broker, start_namesrv
from tests.integration.wire import invoke_once

SERVICE = "/apache.rocketmq.v2.MessagingService/"


def _call(endpoint: str, rpc: str, request, response_type):
    with grpc.insecure_channel(endpoint) as channel:
        fn = channel.unary_unary(SERVICE + rpc, request_serializer=type(request).SerializeToString,
                                 response_deserializer=response_type.FromString)
        return fn(request, metadata=[("x-mq-client-id", "it-client")], timeout=10)


def _admin(addr: str, cmd) -> None:
    assert invoke_once(addr, cmd).code == ResponseCode.SUCCESS


def _message(topic: str, kind=pb.NORMAL, message_id: str | None = None) -> pb.Message:
    m = pb.Message(topic=pb.Resource(name=topic), body=b"hello")
    m.system_properties.message_id = uuid.uuid4().hex.upper() if message_id is None else message_id
    m.system_properties.message_type = kind
    return m


@pytest.fixture(scope="module")
def brokers(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grpc5-it")
    ns = start_namesrv(tmp)
    ports = [free_port(), free_port()]
    started = []
    try:
        for name, port in zip(("broker-a", "broker-b"), ports, strict=True):
            started.append(start_broker(tmp, ns.addr, name=name, grpcListenPort=port))
        yield ns, started, ports
    finally:
        for b in started:
            b.stop()
        ns.stop()


def test_routes_name_each_brokers_own_grpc_endpoint(brokers):
    ns, started, ports = brokers
    for b in started:
        _admin(b.addr, wire.create_topic("Routed5", 2))
    deadline, seen = time.time() + 40, {}
    while time.time() < deadline:
        resp = _call(
            f"127.0.0.1:{ports[0]}",
            "QueryRoute",
            spb.QueryRouteRequest(topic=pb.Resource(name="Routed5")),
            spb.QueryRouteResponse,
        )
        seen = {q.broker.name: q.broker.endpoints.addresses[0].port for q in resp.message_queues}
        if seen == {"broker-a": ports[0], "broker-b": ports[1]}:
            break
        time.sleep(0.5)
    assert seen == {"broker-a": ports[0], "broker-b": ports[1]}
    assert [q.id for q in resp.message_queues] == [0, 1, 0, 1]


def test_a_typed_topic_takes_only_its_type(brokers):
    _, started, ports = brokers
    cmd = wire.create_topic("Fifo5", 2)
    cmd.ext_fields["attributes"] = "+message.type=FIFO"
    _admin(started[0].addr, cmd)
    endpoint = f"127.0.0.1:{ports[0]}"
    deadline = time.time() + 30
    while True:
        route = _call(
            endpoint,
            "QueryRoute",
            spb.QueryRouteRequest(topic=pb.Resource(name="Fifo5")),
            spb.QueryRouteResponse,
        )
        if route.status.code == pb.OK or time.time() > deadline:
            break
        time.sleep(0.3)
    assert {tuple(q.accept_message_types) for q in route.message_queues} == {(pb.FIFO,)}
    plain = _call(
        endpoint, "SendMessage", spb.SendMessageRequest(messages=[_message("Fifo5")]), spb.SendMessageResponse
    )
    assert plain.entries[0].status.code == pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, plain
    fifo = _message("Fifo5", pb.FIFO)
    fifo.system_properties.message_group = "g1"
    ok = _call(endpoint, "SendMessage", spb.SendMessageRequest(messages=[fifo]), spb.SendMessageResponse)
    assert ok.status.code == pb.OK and ok.entries[0].message_id == fifo.system_properties.message_id


def test_bad_requests_get_their_status_codes(brokers):
    _, started, ports = brokers
    endpoint = f"127.0.0.1:{ports[0]}"
    _admin(started[0].addr, wire.create_topic("Bad5", 1))
    missing = _call(endpoint, "QueryRoute", spb.QueryRouteRequest(topic=pb.Resource(name="NoSuchTopic5")),
                    spb.QueryRouteResponse)
    assert missing.status.code == pb.TOPIC_NOT_FOUND
    no_id = _call(endpoint, "SendMessage", spb.SendMessageRequest(messages=[_message("Bad5", message_id="")]),
                  spb.SendMessageResponse)
    assert no_id.entries[0].status.code == pb.ILLEGAL_MESSAGE_ID
    empty = _call(endpoint, "SendMessage", spb.SendMessageRequest(), spb.SendMessageResponse)
    assert empty.status.code == pb.BAD_REQUEST
    ack = _call(endpoint, "AckMessage", spb.AckMessageRequest(
        group=pb.Resource(name="G5"), topic=pb.Resource(name="Bad5"),
        entries=[spb.AckMessageEntry(message_id="x", receipt_handle="not-a-handle")]), spb.AckMessageResponse)
    assert ack.status.code == pb.INVALID_RECEIPT_HANDLE
    change = _call(endpoint, "ChangeInvisibleDuration", spb.ChangeInvisibleDurationRequest(
        group=pb.Resource(name="G5"), topic=pb.Resource(name="Bad5"), receipt_handle="P1AAAA"),
        spb.ChangeInvisibleDurationResponse)
    assert change.status.code == pb.INVALID_RECEIPT_HANDLE
    tx = _call(endpoint, "EndTransaction", spb.EndTransactionRequest(
        topic=pb.Resource(name="Bad5"), message_id="x", transaction_id="garbage", resolution=pb.COMMIT),
        spb.EndTransactionResponse)
    assert tx.status.code == pb.INVALID_TRANSACTION_ID
    with grpc.insecure_channel(
        endpoint
    ) as channel:  # bytes that are no request: gRPC's own error, server fine
        raw = channel.unary_unary(SERVICE + "SendMessage")
        with pytest.raises(grpc.RpcError):
            raw(b"\xff\xff\xff", timeout=5)
    assert _call(endpoint, "Heartbeat", spb.HeartbeatRequest(), spb.HeartbeatResponse).status.code == pb.OK


def test_an_rpc_not_served_answers_unimplemented_and_is_logged_once(brokers):
    _, started, ports = brokers
    endpoint = f"127.0.0.1:{ports[0]}"
    request = spb.GetOffsetRequest(group=pb.Resource(name="G5"))
    for _ in range(2):
        with pytest.raises(grpc.RpcError) as err:
            _call(endpoint, "GetOffset", request, spb.GetOffsetResponse)
        assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
    deadline = time.time() + 5
    while time.time() < deadline and "GetOffset" not in started[0].log_text():
        time.sleep(0.1)
    logged = [line for line in started[0].log_text().splitlines() if "GetOffset" in line]
    assert len(logged) == 1 and "not served (UNIMPLEMENTED)" in logged[0] and "it-client" in logged[0], logged


# Rust's 5.0.0 client sets its deadline to its polling time; Go's SimpleConsumer asks no polling time (it
# long-polls, against Apache's proxy, until its deadline less half its request timeout)
@pytest.mark.parametrize("asked", [2, None], ids=["deadline-is-the-polling-time", "no-polling-time"])
def test_an_empty_receive_waits_but_answers_before_the_clients_deadline(brokers, asked):
    _, started, ports = brokers
    endpoint = f"127.0.0.1:{ports[0]}"
    _admin(started[0].addr, wire.create_topic("Empty5", 1))
    request = spb.ReceiveMessageRequest(
        group=pb.Resource(name="GEmpty5"), message_queue=pb.MessageQueue(topic=pb.Resource(name="Empty5")),
        filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"), batch_size=1)
    request.invisible_duration.FromSeconds(10)
    if asked is not None:
        request.long_polling_timeout.FromSeconds(asked)
    with grpc.insecure_channel(endpoint) as channel:
        fn = channel.unary_stream(SERVICE + "ReceiveMessage",
                                  request_serializer=spb.ReceiveMessageRequest.SerializeToString,
                                  response_deserializer=spb.ReceiveMessageResponse.FromString)
        began = time.monotonic()
        answers = list(fn(request, metadata=[("x-mq-client-id", "it-client")], timeout=2))
    assert [a.status.code for a in answers] == [pb.MESSAGE_NOT_FOUND]
    assert 1.0 < time.monotonic() - began < 2.0
