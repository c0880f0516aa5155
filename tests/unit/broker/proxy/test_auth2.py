"""ACL 2.0 on the 5.x endpoint: what each RPC asks (Apache 5.3's gRPC authorization context builder),
the header read as Apache reads it, and the refusals (UNAUTHORIZED with Apache's words)."""

from __future__ import annotations

import pytest

from pyrocketmq.broker.proxy.auth import (
    GrpcAccess,
    HeaderError,
    expected_signature,
    read_authorization,
    user_asks,
)
from pyrocketmq.broker.proxy.pb import definition_pb2 as pb, service_pb2 as spb
from pyrocketmq.server.acl import AclValidator, parse_plain_acl
from pyrocketmq.server.acl2 import Action, Resource, User, UserStatus, UserType, acl_from_info
from pyrocketmq.server.acl_service import UserAccess
from pyrocketmq.server.acl_table import RequestRefused

from .accounts import ALICE, DATE, signed_metadata

PUB, SUB = (Action.PUB,), (Action.SUB,)
T, G = Resource.topic("T"), Resource.group("G")


def _r(name: str) -> pb.Resource:
    return pb.Resource(name=name)


def _queue(topic: str) -> pb.MessageQueue:
    return pb.MessageQueue(topic=_r(topic))


@pytest.mark.parametrize(("request_", "asks"), [
    (spb.SendMessageRequest(messages=[pb.Message(topic=_r("T"))]), [(T, PUB)]),
    (spb.SendMessageRequest(messages=[pb.Message(topic=_r("T")), pb.Message(topic=_r("U"))]),
     [(T, PUB), (Resource.topic("U"), PUB)]),
    (spb.EndTransactionRequest(topic=_r("T")), [(T, PUB)]),
    (spb.RecallMessageRequest(topic=_r("T"), recall_handle="h"), [(T, PUB)]),
    (spb.QueryRouteRequest(topic=_r("T")), [(T, (Action.PUB, Action.SUB))]),
    (spb.ReceiveMessageRequest(group=_r("G"), message_queue=_queue("T")), [(G, SUB), (T, SUB)]),
    (spb.AckMessageRequest(group=_r("G"), topic=_r("T")), [(G, SUB), (T, SUB)]),
    (spb.ForwardMessageToDeadLetterQueueRequest(group=_r("G"), topic=_r("T")), [(G, SUB), (T, SUB)]),
    (spb.QueryAssignmentRequest(group=_r("G"), topic=_r("T")), [(G, SUB), (T, SUB)]),
    (spb.ChangeInvisibleDurationRequest(group=_r("G"), topic=_r("T")), [(G, SUB)]),
    (spb.HeartbeatRequest(client_type=pb.SIMPLE_CONSUMER, group=_r("G")), [(G, SUB)]),
    (spb.HeartbeatRequest(client_type=pb.PUSH_CONSUMER, group=_r("G")), [(G, SUB)]),
    (spb.HeartbeatRequest(client_type=pb.PRODUCER), []),
    (spb.NotifyClientTerminationRequest(group=_r("G")), [(G, SUB)]),
    (spb.NotifyClientTerminationRequest(), []),
    (spb.TelemetryCommand(settings=pb.Settings(publishing=pb.Publishing(topics=[_r("T")]))), [(T, PUB)]),
    (spb.TelemetryCommand(settings=pb.Settings(subscription=pb.Subscription(
        group=_r("G"), subscriptions=[pb.SubscriptionEntry(topic=_r("T"))]))), [(G, SUB), (T, SUB)]),
    (spb.TelemetryCommand(status=pb.Status(code=pb.OK)), []),
])
def test_what_each_rpc_asks(request_, asks):
    assert user_asks(request_) == asks


@pytest.mark.parametrize(("request_", "why"), [
    (spb.SendMessageRequest(), "message is null."),
    (spb.SendMessageRequest(messages=[pb.Message()]), "topic is null."),
    (spb.QueryRouteRequest(), "topic is null."),
    (spb.ReceiveMessageRequest(group=_r("G")), "messageQueue is null."),
    (spb.AckMessageRequest(topic=_r("T")), "group is null."),
    (spb.HeartbeatRequest(client_type=pb.SIMPLE_CONSUMER), "group is null."),
])
def test_blank_names_are_refused_in_apaches_words(request_, why):
    with pytest.raises(RequestRefused, match=why.replace(".", r"\.")):
        user_asks(request_)


def test_the_header_is_read_as_apache_reads_it():
    header = "MQv2-HMAC-SHA1 Credential=alice/x, SignedHeaders=x-mq-date-time, Signature=AB"
    assert read_authorization(header) == ("MQv2-HMAC-SHA1", "alice", "AB")
    assert read_authorization("Any Credential=bob") == ("Any", "bob", "")
    for bad, why in (("nospace", "authentication header is incorrect."),
                     ("MQv2-HMAC-SHA1 Credential", "authentication keyValues length is incorrect")):
        with pytest.raises(HeaderError, match=why):
            read_authorization(bad)


USERS = {
    "root": User("root", "root-password", UserType.SUPER),
    "alice": User("alice", "alice-password"),
    "carol": User("carol", "carol-password", user_status=UserStatus.DISABLE),
    "alice01": User("alice01", "alice-password"),
}
ACLS = {name: acl_from_info({"subject": f"User:{name}", "policies": [{"entries": [
    {"resource": "Topic:T", "actions": ["Pub", "Sub"], "decision": "Allow"},
    {"resource": "Group:G", "actions": ["Sub"], "decision": "Allow"},
    {"resource": "Topic:*", "actions": ["All"], "decision": "Deny"},
]}]}) for name in ("alice", "alice01")}


def _access(authentication: bool = True, authorization: bool = True,
            validator: AclValidator | None = None) -> GrpcAccess:
    return GrpcAccess(validator, UserAccess(USERS.get, ACLS.get, cluster="DefaultCluster",
                                            authentication=authentication, authorization=authorization))


def _signed(user: str, password: str) -> list[tuple[str, str]]:
    return signed_metadata(user, expected_signature(password, DATE))


def _send(topic: str) -> spb.SendMessageRequest:
    return spb.SendMessageRequest(messages=[pb.Message(topic=_r(topic))])


def test_a_user_may_do_what_its_acl_allows_and_a_super_user_anything():
    access = _access()
    assert access.refusal(_signed("alice", "alice-password"), "10.0.0.5", _send("T")) is None
    assert access.refusal(_signed("alice", "alice-password".upper()), "10.0.0.5", None) is not None
    receive = spb.ReceiveMessageRequest(group=_r("G"), message_queue=_queue("T"))
    assert access.refusal(_signed("alice", "alice-password"), "10.0.0.5", receive) is None
    assert access.refusal(_signed("root", "root-password"), "10.0.0.5", _send("Other")) is None
    upper = signed_metadata("alice", expected_signature("alice-password", DATE).upper())  # the Node client
    assert access.refusal(upper, "10.0.0.5", _send("T")) is None


def test_what_the_acl_denies_is_refused_unauthorized_in_apaches_words():
    refused = _access().refusal(_signed("alice", "alice-password"), "10.0.0.5", _send("Other"))
    assert refused.code == pb.UNAUTHORIZED
    assert refused.message == ("User:alice has no permission to access Topic:Other from 10.0.0.5, "
                               "the decision is deny.")
    receive = spb.ReceiveMessageRequest(group=_r("H"), message_queue=_queue("T"))
    refused = _access().refusal(_signed("alice", "alice-password"), "10.0.0.5", receive)
    assert refused.message == ("User:alice has no permission to access Group:H from 10.0.0.5, "
                               "no matched policies.")
    settings = spb.TelemetryCommand(settings=pb.Settings(publishing=pb.Publishing(topics=[_r("Other")])))
    assert _access().refusal(_signed("alice", "alice-password"), "10.0.0.5", settings).code == pb.UNAUTHORIZED


@pytest.mark.parametrize(("metadata", "why"), [
    ([], "username cannot be null."),
    ([("x-mq-date-time", DATE)], "username cannot be null."),
    ([("authorization", "MQv2-HMAC-SHA1 Credential=alice, Signature=00")], "datetime is null."),
    ([("x-mq-date-time", DATE), ("authorization", "MQv2-HMAC-SHA1")], "authentication header is incorrect."),
    (_signed("alice", "wrong-password"), "check signature failed."),
    (_signed("nobody", "x"), "User:nobody is not found."),
    (_signed("carol", "carol-password"), "User:carol is disabled."),
])
def test_who_cannot_be_authenticated_is_refused_before_anything(metadata, why):
    for request in (_send("T"), None):  # a call, and a Telemetry stream being opened
        refused = _access().refusal(metadata, "10.0.0.5", request)
        assert refused is not None and (refused.code, refused.message) == (pb.UNAUTHORIZED, why)


def test_each_half_can_be_on_alone():
    no_authorization = _access(authorization=False)
    assert no_authorization.refusal(_signed("alice", "alice-password"), "10.0.0.5", _send("Other")) is None
    assert no_authorization.refusal(_signed("alice", "bad"), "10.0.0.5", _send("T")) is not None
    no_authentication = _access(authentication=False)
    assert no_authentication.refusal(_signed("alice", "bad"), "10.0.0.5", _send("T")) is None
    refused = no_authentication.refusal(_signed("alice", "bad"), "10.0.0.5", _send("Other"))
    assert refused is not None and "Topic:Other" in refused.message
    assert no_authentication.refusal([], "10.0.0.5", spb.QueryRouteRequest(topic=_r("T"))) is not None
    assert no_authentication.refusal([], "10.0.0.5", spb.HeartbeatRequest(client_type=pb.PRODUCER)) is None


def test_with_acl_1_0_too_a_call_must_pass_both():
    validator = AclValidator(parse_plain_acl({"accounts": [
        {**ALICE, "secretKey": "alice-password", "topicPerms": ["T=PUB|SUB", "U=PUB"]}]}))
    access, alice = _access(validator=validator), _signed("alice01", "alice-password")
    assert access.refusal(alice, "10.0.0.5", _send("T")) is None
    first = access.refusal(alice, "10.0.0.5", _send("Other"))
    assert first.code == pb.FORBIDDEN and first.message.startswith("AclException:")  # ACL 1.0 answers first
    second = access.refusal(alice, "10.0.0.5", _send("U"))
    assert second.code == pb.UNAUTHORIZED and "Topic:U" in second.message  # 1.0 lets it by, 2.0 denies
