"""ACL 2.0 on the 5.x gRPC endpoint, with real processes: a broker with ``grpcListenPort``,
``authenticationEnabled`` and ``authorizationEnabled`` and a super user from
``initAuthenticationUser``. The super user creates a normal user and its ACL through the AUTH_*
requests (:class:`~pyrocketmq.client.admin_auth.AdminAuth`); raw signed gRPC calls, as a 5.x client
makes them, then send and receive where the ACL allows and are refused elsewhere, with Apache 5.3's
status (UNAUTHORIZED) and words: a topic the ACL does not grant, a group it does not grant, a wrong
password, no credentials at all, and Settings announcing a topic it may not publish to."""

from __future__ import annotations

import asyncio
import time
import uuid

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration

from pyrocketmq.broker.proxy.auth import expected_signature
from pyrocketmq.broker.proxy.pb import definition_pb2 as pb, service_pb2 as spb
from pyrocketmq.client import Admin, ClientSettings
from pyrocketmq.client.errors import MQBrokerError
from pyrocketmq.remoting.body import SubscriptionGroupConfig
from tests.helpers.cluster import free_port

from .procs import start_broker, start_namesrv

SERVICE = "/apache.rocketmq.v2.MessagingService/"
ROOT = ("root", "root-password")
ALICE = ("alice", "alice-password")
GROUP = "alice-g5"


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grpc5-acl2")
    ns = start_namesrv(tmp)
    grpc_port = free_port()
    try:
        broker = start_broker(tmp, ns.addr, grpcListenPort=grpc_port, authenticationEnabled="true",
                              authorizationEnabled="true",
                              initAuthenticationUser='{"username":"root","password":"root-password"}')
    except BaseException:
        ns.stop()
        raise
    try:
        asyncio.run(_setup(ns.addr, broker.addr))
        yield f"127.0.0.1:{grpc_port}"
    finally:
        broker.stop()
        ns.stop()


async def _setup(ns: str, broker: str) -> None:
    root = ClientSettings(access_key=ROOT[0], secret_key=ROOT[1], request_timeout=5)
    async with Admin(ns, client=root) as admin:
        for topic in ("Orders5", "Secret5"):
            await admin.create_topic(topic, broker_addr=broker, read_queues=1, write_queues=1)
        for group in (GROUP, "other-g5"):
            config = SubscriptionGroupConfig(group_name=group)
            await admin.create_subscription_group(config, broker_addr=broker)
        await admin.create_user(ALICE[0], ALICE[1], broker_addr=broker)
        await admin.create_acl("User:alice", ["Topic:Orders5"], ["Pub", "Sub"], "Allow",
                               broker_addr=broker)
        await admin.create_acl("User:alice", [f"Group:{GROUP}"], ["Sub"], "Allow", broker_addr=broker)
        for _ in range(100):  # the routes the gRPC endpoint answers come from the name server
            try:
                for topic in ("Orders5", "Secret5"):
                    await admin.topic_route(topic)
                return
            except MQBrokerError:
                await asyncio.sleep(0.1)
        raise AssertionError("no routes for the topics")


def _metadata(who: tuple[str, str] | None) -> list[tuple[str, str]]:
    out = [("x-mq-client-id", f"it-acl2-{who[0] if who else 'anonymous'}")]
    if who is not None:
        date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        signature = expected_signature(who[1], date)
        header = f"MQv2-HMAC-SHA1 Credential={who[0]}, SignedHeaders=x-mq-date-time, Signature={signature}"
        out += [("x-mq-date-time", date), ("authorization", header)]
    return out


def _call(endpoint: str, who: tuple[str, str] | None, rpc: str, request, response_type):
    with grpc.insecure_channel(endpoint) as channel:
        fn = channel.unary_unary(SERVICE + rpc, request_serializer=type(request).SerializeToString,
                                 response_deserializer=response_type.FromString)
        return fn(request, metadata=_metadata(who), timeout=10)


def _send(endpoint: str, who: tuple[str, str] | None, topic: str) -> pb.Status:
    message = pb.Message(topic=pb.Resource(name=topic), body=b"hello " + topic.encode())
    message.system_properties.message_id = uuid.uuid4().hex.upper()
    message.system_properties.message_type = pb.NORMAL
    resp = _call(endpoint, who, "SendMessage", spb.SendMessageRequest(messages=[message]),
                 spb.SendMessageResponse)
    return resp.status


def _receive(endpoint: str, who: tuple[str, str], topic: str, group: str) -> list[spb.ReceiveMessageResponse]:
    request = spb.ReceiveMessageRequest(
        group=pb.Resource(name=group), message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
        filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"), batch_size=16,
        invisible_duration=Duration(seconds=30), long_polling_timeout=Duration(seconds=2))
    with grpc.insecure_channel(endpoint) as channel:
        fn = channel.unary_stream(SERVICE + "ReceiveMessage",
                                  request_serializer=type(request).SerializeToString,
                                  response_deserializer=spb.ReceiveMessageResponse.FromString)
        return list(fn(request, metadata=_metadata(who), timeout=15))


def _refusal(status: pb.Status) -> tuple[int, str]:
    return status.code, status.message


def test_a_user_sends_and_receives_where_its_acl_allows(endpoint):
    route = _call(endpoint, ALICE, "QueryRoute", spb.QueryRouteRequest(topic=pb.Resource(name="Orders5")),
                  spb.QueryRouteResponse)
    assert route.status.code == pb.OK and route.message_queues, route
    assert _send(endpoint, ALICE, "Orders5").code == pb.OK
    answers = _receive(endpoint, ALICE, "Orders5", GROUP)
    assert answers[0].status.code == pb.OK, answers
    assert [a.message.body for a in answers if a.HasField("message")] == [b"hello Orders5"]


def test_what_the_acl_does_not_grant_is_refused_in_apaches_words(endpoint):
    assert _refusal(_send(endpoint, ALICE, "Secret5")) == (
        pb.UNAUTHORIZED,
        "User:alice has no permission to access Topic:Secret5 from 127.0.0.1, no matched policies.")
    route = _call(endpoint, ALICE, "QueryRoute", spb.QueryRouteRequest(topic=pb.Resource(name="Secret5")),
                  spb.QueryRouteResponse)
    assert route.status.code == pb.UNAUTHORIZED and not route.message_queues
    answers = _receive(endpoint, ALICE, "Orders5", "other-g5")
    assert [_refusal(a.status) for a in answers] == [(
        pb.UNAUTHORIZED,
        "User:alice has no permission to access Group:other-g5 from 127.0.0.1, no matched policies.")]
    assert _send(endpoint, ROOT, "Secret5").code == pb.OK  # a super user may do anything


def test_who_is_not_a_user_with_its_password_is_refused(endpoint):
    assert _refusal(_send(endpoint, (ALICE[0], "not-her-password"), "Orders5")) == (
        pb.UNAUTHORIZED, "check signature failed.")
    assert _refusal(_send(endpoint, ("mallory", "whatever"), "Orders5")) == (
        pb.UNAUTHORIZED, "User:mallory is not found.")
    assert _refusal(_send(endpoint, None, "Orders5")) == (pb.UNAUTHORIZED, "username cannot be null.")
    heartbeat = _call(endpoint, (ALICE[0], "not-her-password"), "Heartbeat",
                      spb.HeartbeatRequest(client_type=pb.PRODUCER), spb.HeartbeatResponse)
    assert heartbeat.status.code == pb.UNAUTHORIZED


def test_announcing_a_topic_it_may_not_publish_to_is_refused_on_the_stream(endpoint):
    async def announce(topic: str) -> spb.TelemetryCommand:
        async with grpc.aio.insecure_channel(endpoint) as channel:
            call = channel.stream_stream(SERVICE + "Telemetry",
                                         request_serializer=spb.TelemetryCommand.SerializeToString,
                                         response_deserializer=spb.TelemetryCommand.FromString,
                                         )(metadata=_metadata(ALICE))
            await call.write(spb.TelemetryCommand(settings=pb.Settings(
                client_type=pb.PRODUCER, publishing=pb.Publishing(topics=[pb.Resource(name=topic)]))))
            answer = await asyncio.wait_for(call.read(), 10)
            call.cancel()
            return answer

    accepted = asyncio.run(announce("Orders5"))
    assert accepted.status.code == pb.OK and accepted.settings.publishing.max_body_size > 0, accepted
    refused = asyncio.run(announce("Secret5"))
    assert _refusal(refused.status) == (
        pb.UNAUTHORIZED,
        "User:alice has no permission to access Topic:Secret5 from 127.0.0.1, no matched policies.")
    assert not refused.HasField("settings")
