from __future__ import annotations

from pyrocketmq.broker.proxy.auth import GrpcAccess, expected_signature, needs, parse_authorization
from pyrocketmq.broker.proxy.pb import definition_pb2 as pb, service_pb2 as spb
from pyrocketmq.server.acl import ANY, PUB, SUB, AclValidator, parse_plain_acl

from .accounts import ALICE, DATE, signed_metadata

ACL = parse_plain_acl({"globalWhiteRemoteAddresses": ["10.1.2.*"], "accounts": [ALICE]})


def _headers(ak: str = "alice01", sk: str = "alice-secret", upper: bool = False) -> list[tuple[str, str]]:
    sig = expected_signature(sk, DATE)
    return signed_metadata(ak, sig.upper() if upper else sig)


def test_the_header_parses():
    assert parse_authorization(
        "MQv2-HMAC-SHA1 Credential=ak1/x, SignedHeaders=x-mq-date-time, Signature=AB"
    ) == ("ak1", "AB")
    assert parse_authorization("Basic abc") is None and parse_authorization("") is None


def test_needs_by_request():
    send = spb.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(name="T"))])
    assert needs(send) == {"T": PUB}
    receive = spb.ReceiveMessageRequest(
        group=pb.Resource(name="G"), message_queue=pb.MessageQueue(topic=pb.Resource(name="T"))
    )
    assert needs(receive) == {"T": SUB, "%RETRY%G": SUB}
    assert needs(spb.QueryRouteRequest(topic=pb.Resource(name="T"))) == {"T": ANY}
    assert needs(spb.RecallMessageRequest(topic=pb.Resource(name="T"), recall_handle="h")) == {"T": PUB}


def test_needs_of_what_a_telemetry_stream_announces():
    producer = pb.Settings(publishing=pb.Publishing(topics=[pb.Resource(name="T"), pb.Resource(name="U")]))
    assert needs(spb.TelemetryCommand(settings=producer)) == {"T": PUB, "U": PUB}
    consumer = pb.Settings(
        subscription=pb.Subscription(
            group=pb.Resource(name="G"),
            subscriptions=[
                pb.SubscriptionEntry(topic=pb.Resource(name="T")),
                pb.SubscriptionEntry(topic=pb.Resource(name="V")),
            ],
        )
    )
    assert needs(spb.TelemetryCommand(settings=consumer)) == {"T": SUB, "V": SUB, "%RETRY%G": SUB}
    assert needs(spb.TelemetryCommand(status=pb.Status(code=pb.OK))) == {}
    assert needs(spb.TelemetryCommand(settings=pb.Settings())) == {}


def test_announcing_needs_the_rights_of_what_it_announces():
    access = GrpcAccess(AclValidator(ACL))

    def publishing(*topics: str) -> spb.TelemetryCommand:
        return spb.TelemetryCommand(settings=pb.Settings(publishing=pb.Publishing(
            topics=[pb.Resource(name=t) for t in topics])))

    assert access.refusal(_headers(), "127.0.0.1", publishing("T")) is None
    refused = access.refusal(_headers(), "127.0.0.1", publishing("T", "Other"))
    assert refused.code == pb.FORBIDDEN and "topic:Other" in refused.message
    denied_group = spb.TelemetryCommand(settings=pb.Settings(subscription=pb.Subscription(
        group=pb.Resource(name="gdeny"), subscriptions=[pb.SubscriptionEntry(topic=pb.Resource(name="T"))])))
    refused = access.refusal(_headers(), "127.0.0.1", denied_group)
    assert refused.code == pb.FORBIDDEN and "group:gdeny" in refused.message


def test_refusals():
    access = GrpcAccess(AclValidator(ACL))
    send = spb.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(name="T"))])
    assert access.refusal(_headers(), "127.0.0.1", send) is None
    assert access.refusal(_headers(upper=True), "127.0.0.1", send) is None
    assert access.refusal(_headers(sk="wrong"), "127.0.0.1", send).code == pb.UNAUTHORIZED
    assert access.refusal([], "127.0.0.1", send).code == pb.UNAUTHORIZED
    other = spb.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(name="Other"))])
    refused = access.refusal(_headers(), "127.0.0.1", other)
    assert refused.code == pb.FORBIDDEN and "topic:Other" in refused.message
    assert access.refusal([], "10.1.2.3", other) is None  # a white-listed address


def test_a_route_needs_a_right_on_its_topic():
    access = GrpcAccess(AclValidator(ACL))

    def route(topic: str) -> spb.QueryRouteRequest:
        return spb.QueryRouteRequest(topic=pb.Resource(name=topic))

    assert access.refusal(_headers(), "127.0.0.1", route("T")) is None
    refused = access.refusal(_headers(), "127.0.0.1", route("Other"))  # the account's default: DENY
    assert refused.code == pb.FORBIDDEN and "topic:Other" in refused.message
